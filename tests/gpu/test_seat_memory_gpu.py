"""A room's per-seat GPU memory limit on a real card (wd_teach.seat_memory): torch's
allocator stops at it, a run over it is refused naming it, `--envs auto` fits inside it.

Each check runs in a process of its own, as a seat's kernel is: the cap on torch's
allocator holds for the rest of a process, and must not reach the other tests."""

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from wd_teach.seat_memory import ENV_VAR


def seat(code: str, gib: str) -> dict:
    """Run `code` (which prints one JSON line last) as a seat with a limit of `gib` GiB."""
    env = {**os.environ, ENV_VAR: gib}
    done = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], env=env,
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout + done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_the_allocator_stops_at_the_limit_and_a_big_run_is_refused_naming_it():
    found = seat("""
        import json, torch, wd_teach
        from wd_teach.errors import TooLargeError
        from wd_teach.train.trainer import Trainer
        store = wd_teach.DataStore(4, 4)  # the first store on the GPU applies the limit
        try:
            torch.empty(2 * 2**30, dtype=torch.uint8, device="cuda")
            over = "allocated"
        except torch.cuda.OutOfMemoryError:
            over = "refused"
        try:
            Trainer("tag_continuous", gpu=True, sets=["env.num_envs=10000"])
            big = "made"
        except TooLargeError as err:
            big = str(err)
        small = Trainer("cartpole", gpu=True, sets=["env.num_envs=64", "trainer.steps=8"])
        small.iterate()
        print(json.dumps({"over": over, "big": big,
                          "peak": torch.cuda.max_memory_reserved()}))
    """, "1")
    assert found["over"] == "refused"
    assert "limit, 1.00 GiB (WD_TEACH_GPU_MEMORY_GB, set by the room)" in found["big"]
    assert found["peak"] <= 2**30


@pytest.mark.parametrize("gib", ["1", "3"])
def test_envs_auto_fits_inside_the_limit(gib):
    found = seat("""
        import json, torch
        from wd_teach.scale.autoscale import fit_num_envs
        fit = fit_num_envs("cartpole", sets=["trainer.steps=16"])
        print(json.dumps({"envs": fit.num_envs, "free": fit.free_bytes,
                          "budget": fit.budget_bytes, "peak": torch.cuda.max_memory_reserved(),
                          "measured": fit.measured}))
    """, gib)
    limit = float(gib) * 2**30
    assert found["free"] <= limit and found["budget"] <= 0.8 * limit
    assert found["peak"] <= limit, found
    assert found["envs"] >= 32


def test_the_room_bench_runs_two_seats_at_once(tmp_path):
    """bench/room.py's quick version, as the GPU check runs it: two seats train at once,
    each under its limit; a bench, so only a failure fails (never a time)."""
    bench = Path(__file__).resolve().parents[2] / "bench" / "room.py"
    out = tmp_path / "room.json"
    done = subprocess.run([sys.executable, str(bench), "--seats", "2", "--small", "--limit-gb",
                           "2", "--out", str(out)], capture_output=True, text=True, timeout=600)
    print(done.stdout)
    assert done.returncode == 0, done.stdout + done.stderr
    found = json.loads(out.read_text())
    assert [r["rc"] for r in found["results"]] == [0, 0]
    assert all(r["peak_bytes"] <= 2 * 2**30 for r in found["results"])
