"""A room on one GPU: N seats start lesson 07's trainings at the same moment, each a process
of its own under the per-seat memory limit the room's hub sets (WD_TEACH_GPU_MEMORY_GB).

    python bench/room.py                              # 32 seats, each 0.9/32 of the card
    python bench/room.py --seats 16 --limit-gb 4 --out bench/results/room_h100.json
    python bench/room.py --seats 2 --small            # the GPU check's quick version

The seats train what lesson 07 trains: three of every four CartPole (PPO, its config's GPU
size), the fourth Tag as lesson 07's Step 8 sets it up on a GPU (`lesson_tag_run`: 100 envs
of 5 taggers and 50 runners, 120 steps, [64, 64] policies). `--small`: 64 envs, a few steps.
(Tag at its own config's size, 110 agents with [256, 256] policies, needs about 4.3 GiB: on
an H200 shared by 32 seats of 3.95 GiB it does not fit, and the seat is told so.)
The report is a table of each seat's time (from before `Trainer(...)`, so env and kernel
compiles and CUDA-graph recording are in it) and its peak memory (torch's
max_memory_reserved), the card's peak as nvidia-smi saw it, and which seats were starved:
failed (an out-of-memory error among them), or slower than `--starved` times the median
seat of their env. A benchmark: it prints, it never fails on a time; it exits 1 only when
a seat failed (tests/gpu/test_seat_memory_gpu.py runs `--seats 2 --small` so).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path

LIMIT_VAR = "WD_TEACH_GPU_MEMORY_GB"
GIB = 2**30
SMALL = ["env.num_envs=64", "trainer.steps=16"]


def seat_env(seat: int) -> str:
    """Lesson 07's mix: CartPole at three seats of four, Tag at the fourth."""
    return "tag_continuous" if seat % 4 == 3 else "cartpole"


def lesson_tag_run(sizes) -> dict:
    """The overrides lesson 07 trains Tag with (its Step 8 cell, `tag_run`), for `sizes`
    (wd_teach.lessons.sizes); tests/test_room_bench.py holds the two the same."""
    picture = {"num_taggers": sizes.animation_taggers, "num_runners": sizes.animation_runners,
               "num_nearest": min(5, sizes.animation_taggers + sizes.animation_runners - 1),
               "field_size": round(8.0 * ((sizes.animation_taggers + sizes.animation_runners)
                                          / 27) ** 0.5, 1),
               "tagging_distance": 1.0, "episode_length": sizes.animation_frames}
    return {"env": {"num_envs": sizes.tag_train_envs, "params": picture},
            "trainer": {"steps": sizes.animation_frames, "lr": 2e-3},
            "policies": {"taggers": {"hidden": [64, 64]}, "runners": {"hidden": [64, 64]}}}


def run_seat(env: str, iterations: int, small: bool) -> None:
    """One seat (the child process): train, then print one JSON line of what it took."""
    start = time.perf_counter()
    import torch

    from wd_teach.lessons.sizes import lesson_sizes
    from wd_teach.train.trainer import Trainer

    lesson = lesson_tag_run(lesson_sizes(gpu=True)) if env == "tag_continuous" else None
    trainer = Trainer(env, gpu=True, overrides=None if small else lesson,
                      sets=SMALL if small else [])
    for _ in range(iterations):
        trainer.iterate()
    gpu = torch.cuda.is_available()  # without one it still runs, on the CPU: a smoke test
    if gpu:
        torch.cuda.synchronize()
    print(json.dumps({"seconds": time.perf_counter() - start,
                      "peak_bytes": torch.cuda.max_memory_reserved() if gpu else 0,
                      "num_envs": trainer.config.env.num_envs}))


def card_memory(query: str) -> int | None:
    """A number nvidia-smi gives for the seats' GPU (memory.used, memory.total), in bytes."""
    # The card the seats see as device 0: the first of CUDA_VISIBLE_DEVICES where it is set
    # (nvidia-smi numbers the machine's cards, not the ones a process is shown).
    card = (os.environ.get("CUDA_VISIBLE_DEVICES") or "0").split(",")[0].strip() or "0"
    try:
        out = subprocess.run(["nvidia-smi", "-i", card, f"--query-gpu={query}",
                              "--format=csv,noheader,nounits"], capture_output=True,
                             text=True, check=True, timeout=10).stdout
        return int(float(out.split()[0]) * 2**20)
    except (OSError, subprocess.SubprocessError, ValueError, IndexError):
        return None


class CardPeak(threading.Thread):
    """The most memory nvidia-smi saw in use on the seats' GPU while they ran."""

    def __init__(self):
        super().__init__(daemon=True)
        self.peak, self.stopped = None, threading.Event()

    def run(self):
        while not self.stopped.wait(0.5):
            used = card_memory("memory.used")
            if used is not None:
                self.peak = max(self.peak or 0, used)


def start_room(seats: int, limit_gb: float, iterations: int, small: bool) -> list[dict]:
    """Start every seat at once; wait for all; each seat's result (or why it failed)."""
    env = {**os.environ, LIMIT_VAR: f"{limit_gb:g}", "OMP_NUM_THREADS": "1"}
    procs = []
    for seat in range(seats):
        cmd = [sys.executable, __file__, "--seat", seat_env(seat), "--iterations",
               str(iterations), *(["--small"] if small else [])]
        procs.append((seat, subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE,
                                             stderr=subprocess.PIPE, text=True)))
    results = []
    for seat, proc in procs:
        out, err = proc.communicate()
        row = {"seat": seat, "env": seat_env(seat), "rc": proc.returncode}
        if proc.returncode == 0:
            row.update(json.loads(out.strip().splitlines()[-1]))
        else:
            row["error"] = (err.strip().splitlines() or ["(no output)"])[-1]
        results.append(row)
    return results


def mark_starved(results: list[dict], factor: float) -> None:
    """A seat is starved when it failed, or took more than `factor` x its env's median."""
    for env in {r["env"] for r in results}:
        times = [r["seconds"] for r in results if r["env"] == env and r["rc"] == 0]
        median = statistics.median(times) if times else None
        for r in results:
            if r["env"] == env:
                r["starved"] = r["rc"] != 0 or r["seconds"] > factor * median


def table(results: list[dict], card_peak: int | None, limit_gb: float) -> str:
    lines = [f"{'seat':>4} {'env':<15} {'envs':>6} {'seconds':>8} {'peak GiB':>9}  starved"]
    for r in results:
        if r["rc"] == 0:
            lines.append(f"{r['seat']:>4} {r['env']:<15} {r['num_envs']:>6} {r['seconds']:>8.1f} "
                         f"{r['peak_bytes'] / GIB:>9.2f}  {'YES' if r['starved'] else 'no'}")
        else:
            lines.append(f"{r['seat']:>4} {r['env']:<15} {'':>6} {'failed':>8} {'':>9}  YES: "
                         f"{r['error'][:80]}")
    starved = sum(r["starved"] for r in results)
    card = "unknown (no nvidia-smi)" if card_peak is None else f"{card_peak / GIB:.1f} GiB"
    lines.append(f"{len(results)} seats, {limit_gb:g} GiB each; card peak {card}; "
                 f"{starved} starved")
    return "\n".join(lines)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seats", type=int, default=32)
    parser.add_argument("--limit-gb", type=float,
                        help="each seat's limit (default: 0.9 of the card over the seats)")
    parser.add_argument("--iterations", type=int, help="per seat (default 20; --small 3)")
    parser.add_argument("--small", action="store_true", help="64 envs, 16 steps: the quick check")
    parser.add_argument("--starved", type=float, default=2.0, metavar="K",
                        help="slower than K x its env's median counts as starved (default 2)")
    parser.add_argument("--out", type=Path, help="write the results as JSON")
    parser.add_argument("--seat", help=argparse.SUPPRESS)  # a child: one seat's training
    args = parser.parse_args(argv)
    iterations = args.iterations or (3 if args.small else 20)
    if args.seat:
        run_seat(args.seat, iterations, args.small)
        return 0
    if args.seats < 1:
        parser.error(f"--seats is a number of seats, at least 1; got {args.seats}")
    limit = args.limit_gb
    if limit is None:
        total = card_memory("memory.total")
        if total is None:
            parser.error("nvidia-smi did not give the card's memory: pass --limit-gb")
        limit = round(0.9 * total / args.seats / GIB, 2)
    peak = CardPeak()
    peak.start()
    start = time.perf_counter()
    results = start_room(args.seats, limit, iterations, args.small)
    wall = time.perf_counter() - start
    peak.stopped.set()
    peak.join()
    mark_starved(results, args.starved)
    print(table(results, peak.peak, limit))
    print(f"all seats done in {wall:.1f} s")
    if args.out:
        args.out.write_text(json.dumps({"seats": args.seats, "limit_gb": limit,
                                        "iterations": iterations, "small": args.small,
                                        "card_peak_bytes": peak.peak, "wall_seconds": wall,
                                        "results": results}, indent=1) + "\n")
    return 1 if any(r["rc"] != 0 for r in results) else 0


if __name__ == "__main__":
    sys.exit(main())
