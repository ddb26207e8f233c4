"""Numba beside PyCUDA: the env step alone, both backends interleaved, many rounds.

    python bench/env_step_backends.py out.json                 # 100, 500, 1,000 envs
    python bench/env_step_backends.py out.json --envs 500 --rounds 21 --calls 500

A call of Tag's env step (10 taggers, 100 runners, random actions, no action check) takes
about 0.3 ms on an H100 from 100 to 1,000 envs: three kernel launches and a few
microseconds of host work each, so one short timing moves by 20-40% with whatever else the
host does at that moment. One `wd-teach bench env` row (100 calls, 30 ms) cannot tell the
backends apart. Here each round times `--calls` calls of each backend back to back, in
alternating order, and the table gives each backend's median rate over the rounds, the
ratio of the medians, and the spread (the middle half of the rounds' ratios). A table to
read, never a pass or fail.
"""

from __future__ import annotations

import argparse
import json
import statistics
from pathlib import Path

import torch

from wd_teach.env.wrapper import EnvWrapper, steps_per_second
from wd_teach.scale.bench import sized_config
from wd_teach.train.config import load_config, make_env

BACKENDS = ("pycuda", "numba")


def measure(num_envs: int, rounds: int, calls: int, agents: int = 110) -> dict:
    config = load_config("tag_continuous", gpu=True)
    wrappers = {b: EnvWrapper(make_env(sized_config(config, num_envs, agents, b, True).env),
                              num_envs, b, check_actions=False) for b in BACKENDS}
    rates = {b: [] for b in BACKENDS}
    for r in range(rounds):
        for b in (BACKENDS if r % 2 == 0 else BACKENDS[::-1]):
            rates[b].append(steps_per_second(wrappers[b], calls, warmup=5))
    ratios = sorted(n / p for n, p in zip(rates["numba"], rates["pycuda"], strict=True))
    median = {b: statistics.median(v) for b, v in rates.items()}
    return {"envs": num_envs, "agents": agents, "rounds": rounds, "calls": calls,
            "rates": rates, "median": median,
            "ratio_of_medians": median["numba"] / median["pycuda"],
            "ratio_quartiles": [ratios[len(ratios) // 4], ratios[(3 * len(ratios)) // 4]]}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("--envs", default="100,500,1000")
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--calls", type=int, default=300)
    args = parser.parse_args(argv)
    rows = [measure(int(n), args.rounds, args.calls) for n in args.envs.split(",")]
    print(f"{'envs':>6} {'PyCUDA env steps/s':>20} {'Numba env steps/s':>19} "
          f"{'Numba/PyCUDA':>13} {'middle half':>14}")
    for row in rows:
        lo, hi = row["ratio_quartiles"]
        print(f"{row['envs']:>6,} {row['median']['pycuda']:>20,.0f} "
              f"{row['median']['numba']:>19,.0f} {row['ratio_of_medians']:>13.0%} "
              f"{lo:>6.0%}-{hi:.0%}")
    args.out.write_text(json.dumps({"device": torch.cuda.get_device_name(0),
                                    "torch": torch.__version__, "rows": rows}, indent=1) + "\n")


if __name__ == "__main__":
    main()
