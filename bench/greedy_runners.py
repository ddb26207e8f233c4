"""Why lesson 11's "runners caught" came out the same, to the last digit, for centralized and
independent critics: train its runs (its game, its sizes, both critics) and, for each, score
the runners against random taggers in greedy play and with actions drawn from their policy,
measure how far they move per step in greedy play (env 0's recorded game), and how far their
actor moved in training. Runners that stand still in greedy play are caught alike whatever
trained them.

    python bench/greedy_runners.py [--seeds 3] [--out results/greedy_runners.json]

On a GPU it runs lesson 11's GPU sizes (lesson_sizes()), on a CPU its toy sizes.
results/greedy_runners_h200.log is its first version's output on an H200 (2026-11-28): the
same measurements, with "sampled" for "drawn" and the move and the score on separate lines.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np

import wd_teach
from wd_teach.floors import set_fast
from wd_teach.train.trainer import Trainer
from wd_teach_envs.tag_continuous import TagContinuous

CRITICS = ("independent", "centralized")


def lesson_overrides(seed: int, critic: str, sizes) -> dict:
    """The overrides of lesson 11's `tag_run(seed, critic=critic)`: its game and sizes, one
    policy per role, each two networks (tests/test_bench.py holds them to the lesson's own
    cells)."""
    game = {"num_taggers": sizes.marl_taggers, "num_runners": sizes.marl_runners,
            "num_nearest": sizes.marl_nearest, "episode_length": sizes.marl_episode_length}
    roles = TagContinuous(**game).agent_roles()
    return {"env": {"num_envs": sizes.marl_envs, "params": game},
            "policies": {role: {"agents": role, "hidden": [64, 64], "shared": False,
                                "activation": "tanh"} for role in roles},
            "trainer": {"seed": seed, "critic": critic, "iterations": sizes.marl_iterations}}


def lesson_run(seed: int, critic: str, sizes, gpu: bool) -> Trainer:
    """Lesson 11's `tag_run(seed, critic=critic)`."""
    return Trainer("tag_continuous", gpu=gpu, overrides=lesson_overrides(seed, critic, sizes))


def score(seed: int, critic: str, sizes, gpu: bool) -> dict:
    trainer = lesson_run(seed, critic, sizes, gpu)
    runners = trainer.env.agent_roles()["runners"]
    start = {k: v.clone() for k, v in trainer.policies["runners"].state_dict().items()}
    trainer.train(progress=False)
    moved = max(float((v.float() - start[k].float()).abs().max())
                for k, v in trainer.policies["runners"].state_dict().items() if "actor" in k)
    taggers = tuple(g.name for g in trainer.groups if g.agents[0] not in runners)
    greedy = trainer.evaluate(num_envs=sizes.marl_eval_envs, random=taggers, record=True)
    drawn = trainer.evaluate(num_envs=sizes.marl_eval_envs, random=taggers, greedy=False)
    xy = np.stack([np.asarray(greedy.frames["loc_x"]), np.asarray(greedy.frames["loc_y"])])
    return {"seed": seed, "critic": critic,
            "caught greedy": greedy.metrics["tags_per_episode"],
            "caught drawn": drawn.metrics["tags_per_episode"],
            "greedy move a step": float(np.abs(np.diff(xy[:, :, runners], axis=1)).mean()),
            "actor moved": moved, "runners x": np.asarray(greedy.frames["loc_x"])[:, runners]}


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--out", type=Path)
    args = parser.parse_args(argv)
    set_fast(False)  # as lesson 11: the centralized critic has no fast twin
    try:
        sizes, gpu = wd_teach.lesson_sizes(), wd_teach.gpu_available()
        rows = []
        for seed in range(args.seeds):
            runs = {critic: score(seed, critic, sizes, gpu) for critic in CRITICS}
            for run in runs.values():
                print(f"seed {seed} {run['critic']:11s} caught greedy {run['caught greedy']:.4f} "
                      f"drawn {run['caught drawn']:.4f}, runners' greedy move a step "
                      f"{run['greedy move a step']:.4f}, actor moved {run['actor moved']:.4f}")
            same = np.array_equal(*(runs[c].pop("runners x") for c in CRITICS))
            print(f"seed {seed}: the two greedy games of env 0 the same for the runners? {same}")
            rows += [{**run, "greedy games the same": same} for run in runs.values()]
    finally:
        set_fast("reset")
    result = {"benchmark": "greedy_runners", "gpu": gpu, "rows": rows}
    if args.out:
        args.out.write_text(json.dumps(result, indent=1))
    return result


if __name__ == "__main__":
    main()
