"""How many adds a plain += loses when many threads add to one counter at once.

The measurement behind 06's picture of lost updates: for each number of threads per
counter, every thread of every environment adds 1 to its environment's counter, with
count_plain and with count_atomic (kernels.cu, kernels_numba.py), and the counters are
compared with what every add would make. On a GPU the plain += loses most of them; under
Numba's simulator it loses none, because the simulator runs a block's threads in turn (one
Python thread at a time), so it cannot show the race at all.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np

from wd_teach.data import DataStore
from wd_teach.errors import WdTeachError
from wd_teach.launch import KernelLauncher

#: The CUDA C kernels; their Numba twins are in kernels_numba.py beside this file.
CUDA_C_PATH = Path(__file__).parent / "kernels.cu"
KERNELS = ("count_plain", "count_atomic")


def lost_updates(backend: str, threads: Sequence[int], num_envs: int) -> dict[str, np.ndarray]:
    """{kernel: the fraction of adds lost, one value per entry of `threads`}: with `t`
    threads adding to each of `num_envs` counters, 1 - (sum of counters) / (num_envs * t)."""
    if not threads or any(int(t) < 1 for t in threads) or int(num_envs) < 1:
        raise WdTeachError(f"threads={list(threads)} and num_envs={num_envs}: give at least "
                           "one count of threads, each 1 or more, and num_envs >= 1.")
    lost = {name: [] for name in KERNELS}
    for count in threads:
        store = DataStore(int(num_envs), int(count))
        store.push("hits", np.zeros(int(num_envs), np.int32), per="env")
        launcher = KernelLauncher(store, backend)
        if launcher.backend.reads_cuda_c:
            launcher.load(CUDA_C_PATH)
        else:
            from wd_teach.exercises.races import kernels_numba

            launcher.load(kernels_numba)
        for name in KERNELS:
            store["hits"].zero_()
            launcher.launch(name)
            counted = int(store.pull("hits").sum(dtype=np.int64))
            lost[name].append(1 - counted / (int(num_envs) * int(count)))
    return {name: np.array(values) for name, values in lost.items()}
