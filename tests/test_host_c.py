"""CUDA C run on the CPU (wd_teach/exercises/host_c.py): what the checkers use where no GPU
runs the learner's CUDA C. Each launch runs the grid's threads one after another, so it
computes what a GPU computes for kernels whose threads neither wait for nor race each other,
and says so when a kernel waits at a barrier."""

import numpy as np
import pytest

from wd_teach.data import DataStore
from wd_teach.errors import LaunchError
from wd_teach.exercises.host_c import HOST_C, compiler
from wd_teach.launch import KernelLauncher
from wd_teach.lessons.demo import DEMO_CUDA_C

pytestmark = pytest.mark.skipif(compiler() is None, reason="no C++ compiler on PATH (g++)")

COUNT = r"""
#include "wd_teach.cuh"
extern "C" __global__ void count(int* hits, float* total, const float* x, int num_agents) {
  const int agent = wd_agent_id();
  if (agent >= num_agents) return;
  atomicAdd(&hits[wd_env_id()], 1);
  atomicAdd(&total[wd_env_id()], x[wd_slot(wd_env_id(), agent, num_agents)]);
}
"""


def make_store(envs=3, agents=5):
    store = DataStore(envs, agents, device="cpu")  # on a GPU machine too
    rng = np.random.default_rng(0)
    for name in ("pos", "vel", "x"):
        store.push(name, rng.random((envs, agents), dtype=np.float32), per="agent")
    store.push("hits", np.zeros(envs, np.int32), per="env")
    store.push("total", np.zeros(envs, np.float32), per="env")
    store.set_constant("dt", 0.5)
    return store


@pytest.mark.parametrize("max_threads", [5, 2])  # one block per env, and three
def test_a_kernel_run_on_the_cpu_computes_what_it_says(max_threads):
    store = make_store()
    want = store.pull("pos") + store.pull("vel") * np.float32(0.5)
    launcher = KernelLauncher(store, HOST_C, max_threads=max_threads)
    assert launcher.load(DEMO_CUDA_C) == ["move"]
    launcher.launch("move")
    np.testing.assert_array_equal(store.pull("pos"), want)


def test_atomics_on_the_cpu_count_every_thread():
    store = make_store()
    launcher = KernelLauncher(store, HOST_C, max_threads=2)
    launcher.load(COUNT)
    launcher.launch("count")
    np.testing.assert_array_equal(store.pull("hits"), [5, 5, 5])
    np.testing.assert_allclose(store.pull("total"), store.pull("x").sum(axis=1), rtol=1e-6)


def test_a_barrier_stops_the_launch_and_says_why():
    launcher = KernelLauncher(make_store(), HOST_C)
    launcher.load(DEMO_CUDA_C.replace("pos[i] +=", "__syncthreads();\n  pos[i] +="))
    with pytest.raises(LaunchError, match="barrier.*runs only on a GPU"):
        launcher.launch("move")


def test_c_that_does_not_compile_says_what_the_compiler_said():
    launcher = KernelLauncher(make_store(), HOST_C)
    with pytest.raises(LaunchError, match="could not build.*undeclared|not declared"):
        launcher.load(DEMO_CUDA_C.replace("vel[i] * dt", "vel[i] * speed"))


def test_a_store_on_a_gpu_is_refused_before_any_launch():
    """A kernel on the CPU reads host memory: a store's GPU arrays would be bad addresses."""
    import torch

    launcher = KernelLauncher(make_store(), HOST_C)
    launcher.load(DEMO_CUDA_C)
    with pytest.raises(LaunchError, match="store on the CPU"):
        HOST_C.launch_call(("move", None), (), torch.device("cuda"))


def test_the_doctor_names_the_compiler_where_no_gpu_is():
    import wd_teach

    report = wd_teach.discover()
    rows = {row.piece: row for row in report.rows}
    if report.has_gpu:
        assert "C++ compiler" not in rows  # on a GPU the CUDA C runs there
    else:
        assert rows["C++ compiler"].found == compiler()
