"""Benchmark: the action sampler against torch.multinomial and Categorical.

    python bench/sampler.py results/sampler.json
    python bench/sampler.py out.json --envs 10000 --agents 1000 --actions 20 --repeats 100

Times one draw per agent at 10,000 envs x 1,000 agents x 20 actions (the default) on the
GPU, with every backend that runs here, through `wd_teach.bench_sampler`: CUDA events, a
warm-up, the median of many calls. Prints a table with the GPU's name and writes the rows as
JSON. Without a GPU it runs at lesson size and says so. It reports; it never fails on a time.
"""

from __future__ import annotations

import argparse
import json
import platform
from pathlib import Path

import torch

import wd_teach
from wd_teach.sampler.bench import bench_sampler, format_table, speedups

FULL = {"envs": 10_000, "agents": 1_000, "actions": 20}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path, help="where to write the JSON results")
    parser.add_argument("--envs", type=int, default=None)
    parser.add_argument("--agents", type=int, default=None)
    parser.add_argument("--actions", type=int, default=None)
    parser.add_argument("--repeats", type=int, default=None)
    parser.add_argument("--backends", nargs="*", default=None, choices=wd_teach.BACKENDS)
    args = parser.parse_args(argv)

    gpu = wd_teach.gpu_available()
    lesson = wd_teach.lesson_sizes()
    small = {"envs": lesson.num_envs, "agents": lesson.num_agents, "actions": lesson.num_actions}
    sizes = {key: getattr(args, key) or (FULL if gpu else small)[key] for key in FULL}
    if not gpu:
        print("No GPU here: timing at lesson size, torch on the CPU and Numba on the CUDA "
              "simulator. These numbers say nothing about GPU speed.\n")
    timings = bench_sampler(sizes["envs"], sizes["agents"], sizes["actions"],
                            backends=args.backends, repeats=args.repeats)
    print(format_table(timings))

    faster = speedups(timings)
    results = {
        "device": timings[0].device,
        "gpu": gpu,
        "torch": torch.__version__,
        "wd_teach": wd_teach.__version__,
        "python": platform.python_version(),
        "sizes": sizes,
        "rows": [{**t.as_dict(), "speedup_vs_multinomial": faster[t.name]} for t in timings],
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(results, indent=2) + "\n")
    print(f"\nwrote {args.out}")


if __name__ == "__main__":
    main()
