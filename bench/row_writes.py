"""An observation's writes alone, four ways, at the Tag games' launch shape: is the Tag observe
kernel bound by how its threads write their rows? (row_writes.cu says why it is asked.)

    python bench/row_writes.py bench/results/row_writes_h200.json   # 2,000 envs x 1,000 agents
    python bench/row_writes.py out.json --envs 2 --agents 40 --obs-size 13 --backends numba

Each row: a backend and a kernel; the median time of one launch (CUDA events, --calls timed
launches after a warm-up), the bytes it wrote a second, and whether what it wrote is every
float's number (checked against NumPy after the timed launches, obs cleared first):

    own     a thread writes its own row float by float, as the observe does
    staged  each warp stages its rows in shared memory 8 floats at a time and writes them
            with consecutive lanes on consecutive floats
    flat    the block's rows as one run, consecutive threads on consecutive floats: the
            bytes' own speed (each thread can make any float's number here; the observe's
            threads cannot)
    warp    each lane stages its whole row in shared memory, then the warp writes its 32
            rows as the one run they are (blocks of 128 threads, several an env: a block of
            1,024 would need 315 KB of shared memory at 77 floats)

A table to read, never a pass or fail.
"""

from __future__ import annotations

import argparse
import importlib.util
import platform
import statistics
from pathlib import Path

import numpy as np
import torch

import wd_teach
from wd_teach.data import DataStore
from wd_teach.errors import BenchError
from wd_teach.launch import KernelLauncher, launch_geometry
from wd_teach.scale.bench import write_results
from wd_teach.timing import time_calls

HERE = Path(__file__).resolve().parent
KERNELS = ("rows_own", "rows_staged", "rows_flat", "rows_warp")
MAX_THREADS = 1024
#: rows_warp's block (its stage holds 128 rows of at most WARP_OBS floats)
WARP_THREADS, WARP_OBS = 128, 77


def numba_module():
    """row_writes_numba.py, loaded from its file (bench/ is a folder of scripts)."""
    spec = importlib.util.spec_from_file_location("bench_row_writes_numba",
                                                  HERE / "row_writes_numba.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


class _Kernels:
    """What the backend seam asks an env for its step, asked here for the three writers."""

    def cuda_sources(self):
        return [HERE / "row_writes.cu"]

    def include_dirs(self):
        return []

    def numba_kernels(self):
        return numba_module()


def expected(num_envs: int, num_agents: int, obs_size: int) -> np.ndarray:
    """Every float's number, as row_value writes it."""
    # int32, as the kernels count: at the seed's size an int64 grid would take 1.2 GB
    i = np.arange(num_envs * num_agents, dtype=np.int32).reshape(num_envs, num_agents, 1)
    f = np.arange(obs_size, dtype=np.int32).reshape(1, 1, obs_size)
    return ((i * 31 + f * 7) & 1023).astype(np.float32)


class RowWriters:
    """The three kernels loaded on one backend over one store holding obs."""

    def __init__(self, num_envs: int, num_agents: int, obs_size: int, backend: str,
                 max_threads: int = MAX_THREADS):
        for name, value in (("envs", num_envs), ("agents", num_agents),
                            ("obs_size", obs_size)):
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise BenchError(f"{name} must be a whole number of at least 1, got {value!r}.")
        self.store = DataStore(num_envs, num_agents)
        self.store.push("obs", np.zeros((num_envs, num_agents, obs_size), np.float32))
        self.store.set_constant("obs_size", obs_size)
        if obs_size > WARP_OBS:
            raise BenchError(f"obs_size {obs_size} is more than rows_warp's stage holds "
                             f"({WARP_OBS} floats a row): make the stage larger first.")
        self.launcher = KernelLauncher(self.store, backend, max_threads=max_threads)
        self.warp_shape = launch_geometry(num_envs, num_agents, min(max_threads, WARP_THREADS))
        for kernels, folders in self.launcher.backend.env_kernels(_Kernels()):
            self.launcher.load(kernels, folders)

    def run(self, kernel: str) -> None:
        if kernel == "rows_warp":
            shape = self.warp_shape
            self.launcher.launch(kernel, grid=shape.grid, block=shape.block)
        else:
            self.launcher.launch(kernel)

    def written(self, kernel: str) -> np.ndarray:
        """What `kernel` writes into an obs cleared first."""
        self.store["obs"].zero_()
        self.run(kernel)
        return self.store.pull("obs")


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("--envs", type=int, default=2000)
    parser.add_argument("--agents", type=int, default=1000)
    parser.add_argument("--obs-size", type=int, default=77, help="the Tag games' at 10 nearest")
    parser.add_argument("--backends", default="pycuda,numba")
    parser.add_argument("--calls", type=int, default=20)
    parser.add_argument("--max-threads", type=int, default=MAX_THREADS)
    args = parser.parse_args(argv)
    gpu = torch.cuda.is_available()
    device = torch.device("cuda" if gpu else "cpu")
    want = expected(args.envs, args.agents, args.obs_size)
    megabytes = want.nbytes / 1e6
    rows = []
    print(f"{'backend':<8} {'kernel':<12} {'ms':>8} {'GB/s':>8} {'right':>6}   "
          f"({megabytes:,.0f} MB a launch)")
    for backend in args.backends.split(","):
        writers = RowWriters(args.envs, args.agents, args.obs_size, backend, args.max_threads)
        for kernel in KERNELS:
            timed = time_calls(lambda k=kernel, w=writers: w.run(k), args.calls, warmup=3,
                               device=device)
            ms = 1e3 * statistics.median(timed.per_call)
            right = bool(np.array_equal(writers.written(kernel), want))
            rows.append({"backend": backend, "kernel": kernel, "ms": ms,
                         "gb_per_s": megabytes / 1e3 / (ms / 1e3), "right": right})
            print(f"{backend:<8} {kernel:<12} {ms:>8.3f} {rows[-1]['gb_per_s']:>8.1f} "
                  f"{'yes' if right else 'NO':>6}", flush=True)
    name = torch.cuda.get_device_name(0) if gpu else f"CPU ({platform.processor() or 'cpu'})"
    result = {"benchmark": "row_writes", "device": name, "torch": torch.__version__,
              "wd_teach": wd_teach.__version__, "envs": args.envs, "agents": args.agents,
              "obs_size": args.obs_size, "megabytes": megabytes, "calls": args.calls,
              "rows": rows}
    write_results(result, args.out)
    return result


if __name__ == "__main__":
    main()
