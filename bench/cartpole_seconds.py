"""CartPole in seconds: how soon does a PPO config reach an evaluated mean return of 475?

    python bench/cartpole_seconds.py results/cartpole_seconds.json            # the candidates
    python bench/cartpole_seconds.py out.json --only wide --every 0          # one timed run

For each candidate below (changes to envs/cartpole/config.yaml's GPU settings) the clock
starts before `Trainer(...)` (env and kernel compile, policy, CUDA-graph recording all
inside) and stops after the evaluation: argmax actions over 100 fresh episodes, the same
evaluation as bench/learning.py. With `--every N` the run is evaluated every N iterations
and stops at the first evaluation at or above the target (the clock keeps running through
the evaluations: they are part of the time to a known result). With `--every 0` it trains
the candidate's iterations and evaluates once, which is how a config is quoted. The table
reports; nothing here fails on a time. The process's own wall (imports and CUDA start-up
included) is printed at the end.
"""

from __future__ import annotations

import argparse
import json
import time

START = time.perf_counter()

from pathlib import Path  # noqa: E402  (after the clock that times the imports)

import torch  # noqa: E402

from wd_teach.train.trainer import Trainer  # noqa: E402

TARGET = 475.0
EVAL_ENVS = 100
#: name: (changes to the GPU config, iterations)
CANDIDATES = {
    "default": ([], 50),
    "wide": (["env.num_envs=1024", "trainer.steps=32", "algorithm.num_minibatches=4",
              "trainer.lr=2.5e-3"], 40),
    "wider": (["env.num_envs=2048", "trainer.steps=32", "algorithm.num_minibatches=4",
               "trainer.lr=2.5e-3"], 30),
    "wide-short": (["env.num_envs=2048", "trainer.steps=16", "algorithm.num_minibatches=2",
                    "trainer.lr=2.5e-3"], 40),
    "wide-8mb": (["env.num_envs=1024", "trainer.steps=64", "algorithm.num_minibatches=8",
                  "trainer.lr=2.5e-3"], 30),
    "wide-8mb-20": (["env.num_envs=1024", "trainer.steps=64", "algorithm.num_minibatches=8",
                     "trainer.lr=2.5e-3"], 20),
    "wide-4ep": (["env.num_envs=1024", "trainer.steps=32", "algorithm.num_minibatches=4",
                  "trainer.lr=2.5e-3"], 30),
}


def run(name: str, every: int, seed: int) -> dict:
    sets, iterations = CANDIDATES[name]
    start = time.perf_counter()
    trainer = Trainer("cartpole", sets=[*sets, f"trainer.seed={seed}"])
    built = time.perf_counter() - start
    points = []
    reached = None
    while trainer.iteration < iterations:
        step = every or iterations
        trainer.train(min(step, iterations - trainer.iteration), progress=False)
        value = trainer.evaluate(num_envs=EVAL_ENVS).metrics["cart/return"]
        points.append({"iteration": trainer.iteration, "return": value,
                       "seconds": time.perf_counter() - start})
        if value >= TARGET and reached is None:
            reached = points[-1]
            if every:
                break
    return {"candidate": name, "sets": sets, "seed": seed, "setup_seconds": built,
            "num_envs": trainer.wrapper.num_envs, "iterations": trainer.iteration,
            "env_steps": trainer.env_steps, "graphed": trainer.graphed,
            "final_return": points[-1]["return"], "seconds": points[-1]["seconds"],
            "reached": reached, "points": points}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("--only", nargs="*", choices=list(CANDIDATES), default=list(CANDIDATES))
    parser.add_argument("--every", type=int, default=5)
    parser.add_argument("--seeds", type=int, default=1)
    parser.add_argument("--first-seed", type=int, default=0)
    args = parser.parse_args(argv)
    rows = []
    for name in args.only:
        for seed in range(args.first_seed, args.first_seed + args.seeds):
            rows.append(run(name, args.every, seed))
            r = rows[-1]
            hit = (f"475 at iteration {r['reached']['iteration']}, {r['reached']['seconds']:.1f} s"
                   if r["reached"] else "475 not reached")
            print(f"{name} seed {seed}: final {r['final_return']:.1f} after {r['iterations']} "
                  f"iterations, {r['seconds']:.1f} s (setup {r['setup_seconds']:.1f} s); {hit}",
                  flush=True)
            args.out.write_text(json.dumps({
                "device": torch.cuda.get_device_name(0) if torch.cuda.is_available() else "cpu",
                "torch": torch.__version__, "rows": rows}, indent=2) + "\n")
    print(f"process wall {time.perf_counter() - START:.1f} s")


if __name__ == "__main__":
    main()
