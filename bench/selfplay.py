"""Benchmark: do taggers trained against a pool of earlier runners catch more?

    python bench/selfplay.py bench/results/selfplay_h100.json              # lesson 11's game
    python bench/selfplay.py out.json --seeds 3 --iterations 20 --envs 16   # smaller
    python bench/selfplay.py out.json --sizes gpu --envs 64     # the GPU's game on a CPU

Two kinds of run of lesson 11's Tag game (A2C, one policy per role), the same seeds:

    current   taggers and runners learn against each other's latest policy
    pool      the same, but the runners keep up to --pool snapshots of their earlier
              selves (one every --pool-every iterations) and play half the rollouts as one
              of them (policies.runners.pool: wd_teach/train/selfplay.py), so the taggers
              learn against a mixture of runners old and new

The score is cross-play: every run's final taggers play every run's final runners, both
kinds, all seeds (a panel the two kinds share), `--eval-envs` fresh episodes each, most
probable actions; a tagger run's score is its catches per episode over the whole panel.
Against random runners too, a yardstick that does not learn. Each kind gets the IQM over
seeds and its 95% bootstrap interval (rliable), and the per-seed differences pool - current
get theirs; the table says what the interval supports, and nothing here fails on a number.
"""

from __future__ import annotations

import argparse
import json
import platform
import time
from pathlib import Path

import numpy as np
import torch

import wd_teach
from wd_teach.lessons.sizes import lesson_sizes
from wd_teach.scale.selfplay_results import FORMAT
from wd_teach.train.intervals import iqm_interval
from wd_teach.train.trainer import Trainer

KINDS = ("current", "pool")


def make(kind: str, seed: int, args, gpu: bool) -> Trainer:
    sizes = lesson_sizes(args.sizes == "gpu")
    game = {"num_taggers": sizes.marl_taggers, "num_runners": sizes.marl_runners,
            "num_nearest": sizes.marl_nearest, "episode_length": sizes.marl_episode_length}
    runners = {"agents": "runners", "hidden": [64, 64]}
    if kind == "pool":
        runners |= {"pool": args.pool, "pool_every": args.pool_every, "pool_play": 0.5}
    return Trainer("tag_continuous", gpu=gpu, overrides={
        "env": {"num_envs": args.envs or sizes.marl_envs, "params": game},
        "policies": {"taggers": {"agents": "taggers", "hidden": [64, 64]}, "runners": runners},
        "trainer": {"seed": seed, "iterations": args.iterations or sizes.marl_iterations}})


def weights(policy) -> dict:
    return {k: v.detach().clone() for k, v in policy.state_dict().items()}


def catches(judge: Trainer, taggers: dict, runners: dict | None, envs: int) -> float:
    """Catches per episode of `taggers` against `runners` (None: random runners)."""
    judge.policies["taggers"].load_state_dict(taggers)
    if runners is not None:
        judge.policies["runners"].load_state_dict(runners)
    random = () if runners is not None else ("runners",)
    return judge.evaluate(num_envs=envs, random=random).metrics["tags_per_episode"]


def verdict(interval) -> str:
    return interval.verdict("pool higher on these seeds", "pool lower on these seeds")


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("--seeds", type=int, default=None, help="default: lesson 11's")
    parser.add_argument("--iterations", type=int, default=None)
    parser.add_argument("--envs", type=int, default=None)
    parser.add_argument("--eval-envs", type=int, default=None)
    parser.add_argument("--sizes", choices=("gpu", "cpu"), default=None,
                        help="lesson 11's sizes for a GPU or a CPU (default: this machine's)")
    parser.add_argument("--pool", type=int, default=5)
    parser.add_argument("--pool-every", type=int, default=10)
    args = parser.parse_args(argv)
    gpu = torch.cuda.is_available()
    args.sizes = args.sizes or ("gpu" if gpu else "cpu")
    sizes = lesson_sizes(args.sizes == "gpu")
    seeds = list(range(args.seeds or sizes.marl_seeds))
    eval_envs = args.eval_envs or sizes.marl_eval_envs

    trained, seconds = {}, {}
    for kind in KINDS:
        for seed in seeds:
            start = time.perf_counter()
            run = make(kind, seed, args, gpu)
            run.train(progress=False)
            trained[kind, seed] = {g: weights(run.policies[g]) for g in ("taggers", "runners")}
            seconds[kind, seed] = time.perf_counter() - start
            played = np.nanmean([r.get("runners/played_snapshot", 0.0) for r in run.history])
            print(f"trained {kind:8s} seed {seed}: {seconds[kind, seed]:6.1f} s, runners "
                  f"played a snapshot in {played:.0%} of rollouts", flush=True)

    judge = make("current", 0, args, gpu)  # the game and sizes; its weights are replaced
    panel = [trained[key]["runners"] for key in sorted(trained)]
    scores = {kind: {"panel": {}, "random runners": {}} for kind in KINDS}
    for kind in KINDS:
        for seed in seeds:
            taggers = trained[kind, seed]["taggers"]
            scores[kind]["panel"][seed] = float(np.mean(
                [catches(judge, taggers, runners, eval_envs) for runners in panel]))
            scores[kind]["random runners"][seed] = catches(judge, taggers, None, eval_envs)

    rows = []
    print(f"\ntaggers' catches per episode, seeds {seeds}, {eval_envs} episodes per pairing")
    for measure in ("panel", "random runners"):
        for kind in KINDS:
            found = iqm_interval(scores[kind][measure])
            rows.append({"measure": measure, "kind": kind, "iqm": found.iqm,
                         "low": found.low, "high": found.high,
                         "per_seed": scores[kind][measure]})
            print(f"  against {measure:15s} {kind:8s} {found}")
        differences = {s: scores["pool"][measure][s] - scores["current"][measure][s]
                       for s in seeds}
        found = iqm_interval(differences)
        rows.append({"measure": measure, "kind": "pool - current", "iqm": found.iqm,
                     "low": found.low, "high": found.high, "per_seed": differences,
                     "verdict": verdict(found)})
        print(f"  against {measure:15s} pool - current: {found}: {verdict(found)}")

    device = torch.cuda.get_device_name(0) if gpu else f"CPU ({platform.processor() or 'cpu'})"
    result = {"format": FORMAT, "benchmark": "selfplay", "device": device,
              "torch": torch.__version__, "wd_teach": wd_teach.__version__,
              "backend": judge.backend,
              "sizes": args.sizes, "seeds": seeds, "iterations": judge.config.trainer.iterations,
              "envs": judge.config.env.num_envs, "eval_envs": eval_envs,
              "game": judge.config.env.params, "pool": args.pool,
              "pool_every": args.pool_every, "pool_play": 0.5,
              "train_seconds": {f"{k}/{s}": v for (k, s), v in seconds.items()},
              "rows": rows}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n")
    return result


if __name__ == "__main__":
    main()
