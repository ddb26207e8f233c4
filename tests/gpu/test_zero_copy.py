"""One store, three users: a PyCUDA kernel, a Numba kernel and torch share device memory.

Each one changes the array in turn and the next one sees the change: no copies anywhere.
"""

import numpy as np
import pytest
import torch
from numba import cuda

from wd_teach import DataStore, KernelLauncher
from wd_teach.device import BACKENDS

ADD_ONE = r"""
#include "wd_teach.cuh"
extern "C" __global__ void add_one(float* x, int num_agents) {
  const int agent = wd_agent_id();
  if (agent < num_agents) x[wd_slot(wd_env_id(), agent, num_agents)] += 1.0f;
}
"""


@cuda.jit
def times_two(x, num_agents):
    agent = cuda.blockIdx.y * cuda.blockDim.x + cuda.threadIdx.x
    if agent < num_agents:
        x[cuda.blockIdx.x, agent] *= 2.0


def test_pycuda_numba_and_torch_modify_the_same_memory_in_turn():
    store = DataStore(num_envs=64, num_agents=1500)  # 1500 agents: two blocks per env
    start = np.random.default_rng(0).normal(size=(64, 1500)).astype(np.float32)
    store.push("x", start)
    pointer = store["x"].data_ptr()
    pycuda = KernelLauncher(store, "pycuda")
    pycuda.load(ADD_ONE)
    numba = KernelLauncher(store, "numba")
    numba.load(times_two)

    pycuda.launch("add_one")                       # x + 1      (CUDA C via PyCUDA)
    numba.launch("times_two")                      # (x + 1) * 2 (Numba)
    store["x"].sub_(3.0)                           # ... - 3    (torch)
    pycuda.launch("add_one")                       # ... + 1    (PyCUDA again sees torch's write)

    assert store["x"].data_ptr() == pointer
    assert cuda.as_cuda_array(store["x"]).device_ctypes_pointer.value == pointer
    np.testing.assert_allclose(store.pull("x"), (start + 1) * 2 - 3 + 1, rtol=1e-6)


def test_pycuda_runs_in_torchs_context():
    """PyCUDA's current context is the primary one torch allocates in."""
    store = DataStore(2, 3)
    store.push("x", np.zeros((2, 3), np.float32))
    KernelLauncher(store, "pycuda")
    import pycuda.driver as driver

    torch.cuda.synchronize()
    free_torch, _ = torch.cuda.mem_get_info()
    free_pycuda, _ = driver.mem_get_info()
    assert abs(free_torch - free_pycuda) < 64 * 2**20
    allocation = driver.mem_alloc(4)
    assert driver.Context.get_current() is not None
    allocation.free()


@pytest.mark.parametrize("backend", BACKENDS)
def test_store_lives_on_the_gpu(backend):
    store = DataStore(4, 4)
    store.push("x", np.ones((4, 4), np.float32))
    assert store["x"].is_cuda
    KernelLauncher(store, backend)
