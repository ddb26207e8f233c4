"""Tag in a minute: how many runners do trained taggers tag, against random taggers, after
each stretch of at most 60 s of training on one GPU?

    python bench/tag_in_60s.py results/tag_in_60s.json                 # every candidate
    python bench/tag_in_60s.py out.json --only shared-1000 --seconds 60

Tag continuous as `envs/tag_continuous/config.yaml` plays it on a GPU (10 taggers, 100
runners, each seeing its 10 nearest), trained with A2C through the same Trainer as the CLI.
Every `--every` seconds of training the run is evaluated as bench/learning.py evaluates Tag:
100 fresh games, the taggers' most probable actions against random runners, runners tagged
per game, divided by what random taggers tag against random runners. The clock counts
training only (the evaluations are not part of it; building the Trainer is reported apart).
The table and the curve (a PNG beside the JSON) report; nothing here fails on a number.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import torch

from wd_teach.train.trainer import Trainer

EVAL_ENVS = 100
SHARED = [f"policies.{name}.{key}" for name in ("taggers", "runners")
          for key in ("shared=true", "activation=relu")]
PPO = ["algorithm.name=ppo", "algorithm.epochs=4", "algorithm.num_minibatches=4",
       "trainer.lr=1e-3", "trainer.steps=128"]
#: name: changes to the GPU config
CANDIDATES = {
    "default": [],
    "shared-500": [*SHARED, "env.num_envs=500"],
    "shared-1000": [*SHARED, "env.num_envs=1000"],
    "shared-100": SHARED,
    "lr-1e-2": ["trainer.lr=1e-2"],
    "ppo-100": ["algorithm.name=ppo", "algorithm.epochs=4", "algorithm.num_minibatches=4",
                "trainer.lr=1e-3"],
    # The runners learn at a tenth of the taggers' rate (or hardly at all), so the taggers
    # chase runners close to the random ones they are measured against.
    "slow-runners": ["policies.runners.lr=5e-4"],
    "shared-slow-runners": [*SHARED, "policies.runners.lr=5e-4"],
    "ppo-slow-runners": ["algorithm.name=ppo", "algorithm.epochs=4",
                         "algorithm.num_minibatches=4", "trainer.lr=1e-3",
                         "policies.runners.lr=1e-4"],
    "still-runners": ["policies.runners.lr=1e-6"],
    # PPO where it has the most samples a second: shared bodies, 500 envs, 128 steps.
    "ppo-shared-500": [*SHARED, *PPO, "env.num_envs=500"],
    "ppo-shared-100": [*SHARED, *PPO],
}


def tags(trainer: Trainer, **options) -> float:
    return trainer.evaluate(num_envs=EVAL_ENVS, **options).metrics["tags_per_episode"]


def ratios(trainer: Trainer, random_taggers: float) -> dict:
    """Trained taggers' tags over random taggers', acting on their most probable actions
    (the score) and, beside it, on draws from the policy as it trained."""
    return {"ratio": tags(trainer, random=("runners",)) / random_taggers,
            "ratio_drawn": tags(trainer, random=("runners",), greedy=False) / random_taggers}


def run(name: str, seconds: float, every: float, seed: int) -> dict:
    start = time.perf_counter()
    trainer = Trainer("tag_continuous", sets=[*CANDIDATES[name], f"trainer.seed={seed}"])
    built = time.perf_counter() - start
    random_taggers = tags(trainer, random=("taggers", "runners"))
    points = [{"seconds": 0.0, "iteration": 0, **ratios(trainer, random_taggers)}]
    trained = 0.0
    while trained < seconds:
        start = time.perf_counter()
        while time.perf_counter() - start < min(every, seconds - trained):
            trainer.train(1, progress=False)
        torch.cuda.synchronize()
        trained += time.perf_counter() - start
        point = {"seconds": trained, "iteration": trainer.iteration,
                 **ratios(trainer, random_taggers)}
        points.append(point)
        print(f"{name} seed {seed}: {trained:5.1f} s, iteration {trainer.iteration:4d}, "
              f"trained / random taggers {point['ratio']:.2f}x (drawn actions "
              f"{point['ratio_drawn']:.2f}x)", flush=True)
    return {"candidate": name, "sets": CANDIDATES[name], "seed": seed, "build_seconds": built,
            "num_envs": trainer.wrapper.num_envs, "random_taggers_tags": random_taggers,
            # the most any taggers can reach: every runner tagged (bench/tag_chaser.py)
            "ceiling": trainer.env.config.num_runners / random_taggers,
            "env_steps": trainer.env_steps, "points": points,
            "final_ratio": points[-1]["ratio"], "target": 3.0}


def plot(rows: list[dict], path: Path) -> None:
    from matplotlib import pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 3.5))
    for row in rows:
        ax.plot([p["seconds"] for p in row["points"]], [p["ratio"] for p in row["points"]],
                marker=".", label=f"{row['candidate']} ({row['num_envs']} envs)")
    ax.axhline(3.0, color="grey", linestyle="--", label="3x random taggers")
    ceiling = min(row["ceiling"] for row in rows)
    ax.axhline(ceiling, color="black", linestyle=":",
               label=f"every runner tagged ({ceiling:.2f}x)")
    ax.set(xlabel="seconds of training", ylabel="tags: trained / random taggers",
           title=f"Tag, 10 taggers + 100 runners, on {torch.cuda.get_device_name(0)}")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("--only", nargs="*", choices=list(CANDIDATES), default=list(CANDIDATES))
    parser.add_argument("--seconds", type=float, default=60.0)
    parser.add_argument("--every", type=float, default=10.0)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    if not torch.cuda.is_available():
        parser.error("this benchmark times training on a GPU; there is none here.")
    rows = [run(name, args.seconds, args.every, args.seed) for name in args.only]
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps({"device": torch.cuda.get_device_name(0), "rows": rows},
                                   indent=1))
    plot(rows, args.out.with_suffix(".png"))
    print(f"\n{'candidate':<14} {'envs':>6} {'build s':>8} {'ratio at end':>13} "
          f"{'ceiling':>8}")
    for row in rows:
        print(f"{row['candidate']:<14} {row['num_envs']:>6} {row['build_seconds']:8.1f} "
              f"{row['final_ratio']:12.2f}x {row['ceiling']:7.2f}x")


if __name__ == "__main__":
    main()
