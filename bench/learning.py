"""Benchmark: does training really learn? Three runs against three targets.

    python bench/learning.py results/learning.json
    python bench/learning.py out.json --only cartpole --set cartpole:trainer.iterations=80

    cartpole        PPO       the mean return of 100 fresh episodes (argmax actions) >= 475
    pendulum        DDPG      the mean return of 100 fresh episodes (the actor, no noise) > -300
    tag_continuous  A2C       runners tagged per episode by the trained taggers (argmax) at
                              least twice what random taggers tag, both against random runners
    acrobot         PPO       the mean return of 100 fresh episodes (argmax) > -100
    mountain_car    PPO       the mean return of 100 fresh episodes (argmax) > -200: the flag
                              reached (an episode that never reaches it returns -200)
    mountain_car_continuous
                    DDPG      the mean return of 100 fresh episodes (the actor, no noise) > 0:
                              the flag reached (+100, less the push spent on the way)

Each run uses its environment's default config (envs/<env>/config.yaml, full size on a
GPU, toy size on a CPU) through the same Trainer as the CLI and the notebooks. The table
says, as data, whether each target was met; nothing here fails on a number. Without a GPU
the runs are toy-sized and the targets are not expected to be met.
"""

from __future__ import annotations

import argparse
import json
import platform
import time
from pathlib import Path

import torch

import wd_teach
from wd_teach.train.trainer import Trainer

EVAL_ENVS = 100


def run_cartpole(trainer: Trainer) -> dict:
    result = trainer.evaluate(num_envs=EVAL_ENVS)
    return {"metric": "mean return, argmax", "final": result.metrics["cart/return"],
            "target": 475.0, "passed": result.metrics["cart/return"] >= 475.0,
            "last_training_return": trainer.latest("cart/return")}


def run_pendulum(trainer: Trainer) -> dict:
    result = trainer.evaluate(num_envs=EVAL_ENVS)
    value = result.metrics["pendulum/return"]
    return {"metric": "mean return, actor without noise", "final": value, "target": -300.0,
            "passed": value > -300.0, "last_training_return": trainer.latest("pendulum/return")}


def run_tag(trainer: Trainer) -> dict:
    tags = lambda **kw: trainer.evaluate(num_envs=EVAL_ENVS, **kw).metrics["tags_per_episode"]
    trained = tags(random=("runners",))
    baseline = tags(random=("taggers", "runners"))
    ratio = trained / baseline
    return {"metric": "tags per episode: trained taggers / random taggers (random runners)",
            "final": ratio, "target": 2.0, "passed": ratio >= 2.0,
            "trained_taggers_tags": trained, "random_taggers_tags": baseline,
            "trained_taggers_sampled_tags": tags(random=("runners",), greedy=False),
            "trained_vs_trained_tags": tags(),
            "last_training_tags": trainer.latest("tags_per_episode")}


def mean_return_above(key: str, target: float, metric: str):
    """A run whose target is the evaluated mean return of policy `key` above `target`."""
    def run(trainer: Trainer) -> dict:
        result = trainer.evaluate(num_envs=EVAL_ENVS)
        value = result.metrics[f"{key}/return"]
        return {"metric": metric, "final": value, "target": target, "passed": value > target,
                "episode_length": result.metrics["episode_length"],
                "last_training_return": trainer.latest(f"{key}/return")}
    return run


RUNS = {"cartpole": run_cartpole, "pendulum": run_pendulum, "tag_continuous": run_tag,
        "acrobot": mean_return_above("acrobot", -100.0, "mean return, argmax"),
        "mountain_car": mean_return_above("car", -200.0, "mean return, argmax (flag: > -200)"),
        "mountain_car_continuous": mean_return_above(
            "car", 0.0, "mean return, actor without noise (flag: > 0)")}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path, help="where to write the JSON results")
    parser.add_argument("--only", nargs="*", choices=list(RUNS), default=list(RUNS)[:3])
    parser.add_argument("--set", action="append", default=[], metavar="ENV:KEY=VALUE",
                        help="change one env's config, e.g. tag_continuous:trainer.lr=1e-3")
    parser.add_argument("--every", type=int, default=0,
                        help="also evaluate every N iterations (learning over time)")
    args = parser.parse_args(argv)

    gpu = wd_teach.gpu_available()
    device = torch.cuda.get_device_name(0) if gpu else platform.processor() or "CPU"
    if not gpu:
        print("No GPU here: toy-sized runs; the targets are for the GPU sizes.\n")
    rows = []
    for env in args.only:
        sets = [s.split(":", 1)[1] for s in args.set if s.startswith(f"{env}:")]
        trainer = Trainer(env, sets=sets)
        progress = []
        start = time.perf_counter()
        iterations = trainer.config.trainer.iterations
        every = args.every or iterations
        while trainer.iteration < iterations:
            trainer.train(min(every, iterations - trainer.iteration), progress=False)
            if trainer.iteration < iterations:
                paused = time.perf_counter()
                progress.append({"iteration": trainer.iteration, **RUNS[env](trainer)})
                start += time.perf_counter() - paused  # evaluation is not training time
        seconds = time.perf_counter() - start
        row = {"env": env, "algorithm": trainer.config.algorithm_name,
               "backend": trainer.backend, "num_envs": trainer.wrapper.num_envs,
               "iterations": trainer.iteration, "env_steps": trainer.env_steps,
               "wall_seconds": seconds, **RUNS[env](trainer), "progress": progress,
               "config": trainer.config.to_dict()}
        rows.append(row)
        print(f"{env}: {row['final']:.4g} (target {row['target']:g}) after "
              f"{row['iterations']} iterations, {seconds:.1f} s", flush=True)
        for point in progress:
            print(f"    iteration {point['iteration']}: {point['final']:.4g}", flush=True)
        write(args.out, device, gpu, rows)  # after each run: a cut-off benchmark keeps its rows

    head = f"{'env':<16}{'algorithm':<10}{'iterations':>11}{'env steps':>13}{'wall s':>9}" \
           f"{'final':>10}{'target':>9}  met"
    print(f"\n{device}\n{head}")
    for r in rows:
        print(f"{r['env'][:15]:<16}{r['algorithm']:<10}{r['iterations']:>11}{r['env_steps']:>13,}"
              f"{r['wall_seconds']:>9.1f}{r['final']:>10.4g}{r['target']:>9g}  "
              f"{'yes' if r['passed'] else 'no'}")
    print(f"\nwrote {args.out}")


def write(path: Path, device: str, gpu: bool, rows: list[dict]) -> None:
    results = {"device": device, "gpu": gpu, "torch": torch.__version__,
               "wd_teach": wd_teach.__version__, "python": platform.python_version(),
               "runs": rows}
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(results, indent=2) + "\n")


if __name__ == "__main__":
    main()
