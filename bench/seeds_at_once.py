"""Lesson 07's five seeds, one after another and side by side: the time each way, and whether
the runs are the same.

    python bench/seeds_at_once.py                              # both of lesson 07's trainings
    python bench/seeds_at_once.py --only cartpole --out bench/results/seeds_at_once.json

Lesson 07 trains CartPole (PPO, its config's size for this machine) and Tag (A2C, its Step 8
game, `lesson_tag_run`) from seeds 0-4 with `train_seeds` (wd_teach/train/seeds.py), whose
default on a GPU is side by side: a process per seed. Each way is timed from the call to its
return (processes' start, imports and kernel compiles inside), one after another first. The
curves of the two ways are compared number for number: a seed's run must not depend on
where it ran. A benchmark: it prints a table and never fails on a time; it exits 1 when the
two ways' runs differ.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from room import lesson_tag_run  # noqa: E402  (lesson 07's Tag game, held to the lesson)

SEEDS = [0, 1, 2, 3, 4]


def trainings(sizes) -> dict[str, dict]:
    """Lesson 07's two `train_seeds` calls (Steps 6 and 8), as keyword arguments."""
    return {
        "cartpole": {"config": "cartpole", "iterations": sizes.train_iterations,
                     "metric": "cart/return"},
        "tag": {"config": "tag_continuous", "iterations": sizes.tag_train_iterations,
                "metric": "taggers/return", "overrides": lesson_tag_run(sizes)},
    }


def time_both_ways(run: dict) -> dict:
    from wd_teach.train.seeds import train_seeds

    found = {}
    for way, at_once in (("one after another", False), ("side by side", True)):
        start = time.perf_counter()
        runs = train_seeds(run["config"], SEEDS, run["iterations"], metric=run["metric"],
                           overrides=run.get("overrides"), at_once=at_once)
        found[way] = (time.perf_counter() - start, runs.curves)
    alone, apart = found["one after another"], found["side by side"]
    return {"iterations": run["iterations"], "seconds_one_after_another": round(alone[0], 2),
            "seconds_side_by_side": round(apart[0], 2),
            "speedup": round(alone[0] / apart[0], 2),
            "same_runs": bool(np.array_equal(alone[1], apart[1], equal_nan=True))}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--only", choices=["cartpole", "tag"], action="append")
    parser.add_argument("--out", type=Path)
    args = parser.parse_args(argv)

    import torch

    from wd_teach.lessons.sizes import lesson_sizes

    gpu = torch.cuda.is_available()
    runs = trainings(lesson_sizes(gpu=gpu))
    rows = {}
    print(f"seeds {SEEDS} on {torch.cuda.get_device_name() if gpu else 'the CPU'}")
    print(f"{'training':>9} {'iterations':>10} {'one after another':>18} {'side by side':>13} "
          f"{'speedup':>8} {'same runs':>9}")
    for name in args.only or list(runs):
        row = rows[name] = time_both_ways(runs[name])
        print(f"{name:>9} {row['iterations']:>10} {row['seconds_one_after_another']:>16.1f} s "
              f"{row['seconds_side_by_side']:>11.1f} s {row['speedup']:>7.2f}x "
              f"{'yes' if row['same_runs'] else 'NO':>9}", flush=True)
    if args.out:
        args.out.write_text(json.dumps({"gpu": torch.cuda.get_device_name() if gpu else None,
                                        "seeds": SEEDS, "rows": rows}, indent=2) + "\n")
    return 0 if all(row["same_runs"] for row in rows.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
