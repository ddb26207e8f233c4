"""KernelLauncher: geometry, binding by name, both backends, and clear errors."""

import numpy as np
import pytest
from numba import cuda

import wd_teach
from wd_teach import DataStore, KernelLauncher, LaunchError, StoreError, launch_geometry
from wd_teach.lessons.demo import DEMO_CUDA_C, move, reference_move
from wd_teach.numba_index import agent_id, env_id

# Writes each thread's (env, agent) into its slot: the launch shape made visible.
WHERE_CUDA_C = r"""
#include "wd_teach.cuh"
extern "C" __global__ void where(int* env_of, int* agent_of, int num_agents) {
  const int env = wd_env_id();
  const int agent = wd_agent_id();
  if (agent >= num_agents) return;
  env_of[wd_slot(env, agent, num_agents)] = env;
  agent_of[wd_slot(env, agent, num_agents)] = agent;
}
"""


@cuda.jit
def where(env_of, agent_of, num_agents):
    env = env_id()
    agent = agent_id()
    if agent >= num_agents:
        return
    env_of[env, agent] = env
    agent_of[env, agent] = agent


def kernels(backend, cuda_c, numba_kernel):
    return cuda_c if backend == "pycuda" else numba_kernel


@pytest.mark.parametrize("envs, agents, max_threads, grid, threads", [
    (10, 5, 1024, (10, 1), 5),
    (10, 1024, 1024, (10, 1), 1024),
    (10, 1025, 1024, (10, 2), 1024),
    (3, 7, 3, (3, 3), 3),
    (1, 1, 1024, (1, 1), 1),
])
def test_geometry_is_one_block_row_per_env_one_thread_per_agent(envs, agents, max_threads,
                                                                  grid, threads):
    geometry = launch_geometry(envs, agents, max_threads)
    assert geometry.grid == grid and geometry.threads == threads
    assert geometry.blocks_per_env * geometry.threads >= agents


def test_geometry_refuses_what_no_grid_can_hold():
    with pytest.raises(LaunchError, match="at most 67,107,840 agents"):
        launch_geometry(1, 1024 * 65_535 + 1)
    with pytest.raises(LaunchError, match="threads per block"):
        launch_geometry(1, 10, max_threads=2048)


@pytest.mark.parametrize("max_threads", [1024, 3])
def test_every_slot_is_visited_once_with_its_own_env_and_agent(backend, max_threads):
    store = DataStore(3, 7)
    store.push("env_of", np.full((3, 7), -1, np.int32))
    store.push("agent_of", np.full((3, 7), -1, np.int32))
    launcher = KernelLauncher(store, backend, max_threads=max_threads)
    launcher.load(kernels(backend, WHERE_CUDA_C, where))
    launcher.launch("where")
    envs, agents = np.meshgrid(np.arange(3), np.arange(7), indexing="ij")
    np.testing.assert_array_equal(store.pull("env_of"), envs)
    np.testing.assert_array_equal(store.pull("agent_of"), agents)


def test_demo_kernel_matches_numpy_reference(backend):
    rng = np.random.default_rng(1)
    pos = rng.normal(size=(2, 5)).astype(np.float32)
    vel = rng.normal(size=(2, 5)).astype(np.float32)
    store = DataStore(2, 5)
    store.push("pos", pos)
    store.push("vel", vel)
    store.set_constant("dt", 0.5)
    launcher = KernelLauncher(store, backend)
    assert launcher.load(kernels(backend, DEMO_CUDA_C, move)) == ["move"]
    launcher.launch("move")
    launcher.launch("move")
    want = reference_move(reference_move(pos, vel, 0.5), vel, 0.5)
    np.testing.assert_allclose(store.pull("pos"), want, rtol=1e-6)


def test_explicit_argument_names_override_parameter_names(backend):
    store = DataStore(2, 3)
    store.push("x", np.zeros((2, 3), np.float32))
    store.push("speed", np.ones((2, 3), np.float32))
    store.set_constant("step", 2.0)
    launcher = KernelLauncher(store, backend)
    launcher.load(kernels(backend, DEMO_CUDA_C, move))
    launcher.launch("move", "x", "speed", "step", "num_agents")
    assert store.pull("x").min() == 2.0


def test_launch_freezes_the_store(backend):
    store = DataStore(2, 3)
    store.push("env_of", np.zeros((2, 3), np.int32))
    store.push("agent_of", np.zeros((2, 3), np.int32))
    launcher = KernelLauncher(store, backend)
    launcher.load(kernels(backend, WHERE_CUDA_C, where))
    launcher.launch("where")
    with pytest.raises(StoreError, match="frozen"):
        store.push("late", np.zeros((2, 3), np.float32))


def test_numba_loads_modules_dicts_and_paths(tmp_path):
    store = DataStore(2, 3)
    launcher = KernelLauncher(store, "numba")
    assert launcher.load(wd_teach.lessons.demo) == ["move"]
    assert launcher.load({"where": where, "not_a_kernel": len}) == ["where"]
    path = tmp_path / "kernels.py"
    path.write_text("from numba import cuda\n\n@cuda.jit\ndef twice(x):\n    x[0] *= 2\n")
    assert launcher.load(path) == ["twice"]


# -- bad input -------------------------------------------------------------------------------

def numba_store():
    store = DataStore(2, 3)
    store.push("pos", np.zeros((2, 3), np.float32))
    return store


@cuda.jit(device=True)
def helper(x):
    return x


@pytest.mark.parametrize("call, message", [
    (lambda launcher: launcher.launch("nope"), "no kernel named 'nope'"),
    (lambda launcher: launcher.load(DEMO_CUDA_C), "numba backend loads @cuda.jit kernels"),
    (lambda launcher: launcher.load(helper), "helper is a Numba device function"),
    (lambda launcher: launcher.load(helper.py_func), "helper is not a Numba kernel: decorate"),
    (lambda launcher: launcher.load([3]), "got a value of type int, not a Numba kernel"),
    (lambda launcher: launcher.load([]), "no kernels found"),
    (lambda launcher: launcher.load("missing.py"), "no Python file"),
])
def test_numba_launcher_refuses_bad_input(call, message):
    launcher = KernelLauncher(numba_store(), "numba")
    with pytest.raises(LaunchError, match=message):
        call(launcher)


def test_a_device_function_passed_as_a_kernel_is_named_and_the_way_out_said():
    """Not `<numba.cuda...object at 0x7f...>`: the function's own name, and what to do."""
    with pytest.raises(LaunchError) as refused:
        KernelLauncher(numba_store(), "numba").load([helper])
    message = str(refused.value)
    assert " at 0x" not in message and "object" not in message
    assert message.startswith("helper is a Numba device function")
    assert "Load the @cuda.jit kernel that calls helper" in message


def test_missing_store_name_is_named_before_any_launch(backend):
    store = DataStore(2, 3)
    store.push("pos", np.zeros((2, 3), np.float32))  # no "vel", no "dt"
    launcher = KernelLauncher(store, backend)
    launcher.load(kernels(backend, DEMO_CUDA_C, move))
    with pytest.raises(LaunchError, match="needs 'vel'.*Arrays: pos"):
        launcher.launch("move")


def test_wrong_number_of_named_arguments(backend):
    store = numba_store()
    launcher = KernelLauncher(store, backend)
    launcher.load(kernels(backend, DEMO_CUDA_C, move))
    with pytest.raises(LaunchError, match="takes 4 arguments, 2 were named"):
        launcher.launch("move", "pos", "pos")


def test_launcher_needs_a_store():
    with pytest.raises(LaunchError, match="needs a DataStore"):
        KernelLauncher({"pos": np.zeros(3)}, "numba")


def test_unknown_backend_is_refused():
    with pytest.raises(wd_teach.MissingPieceError, match="unknown backend 'cupy'"):
        KernelLauncher(numba_store(), "cupy")


@pytest.mark.skipif(wd_teach.gpu_available(), reason="checks the message on a machine with no GPU")
def test_pycuda_without_gpu_says_plainly_it_needs_one():
    with pytest.raises(wd_teach.MissingPieceError, match="runs CUDA C on an NVIDIA GPU"):
        KernelLauncher(numba_store(), "pycuda")


@cuda.jit
def times_two(x, num_agents):
    agent = agent_id()
    if agent < num_agents:
        x[env_id(), agent] *= 2.0


def test_numba_and_torch_modify_the_same_store_array_in_turn():
    """Zero copies: a Numba kernel and torch take turns on one array, each seeing the other's
    writes (on the simulator here; tests/gpu adds PyCUDA on a real device)."""
    store = DataStore(3, 5)
    start = np.random.default_rng(3).normal(size=(3, 5)).astype(np.float32)
    store.push("x", start)
    tensor = store["x"]
    launcher = KernelLauncher(store, "numba", max_threads=2)
    launcher.load(times_two)
    launcher.launch("times_two")
    tensor.add_(1.0)
    launcher.launch("times_two")
    assert store["x"] is tensor and store["x"].data_ptr() == tensor.data_ptr()
    np.testing.assert_allclose(tensor.cpu().numpy(), (start * 2 + 1) * 2, rtol=1e-6)


def test_direct_launch_arguments_become_c_values():
    """What Numba 0.30 hands a launch (ints for arrays' fields, bools, ctypes scalars) as
    the C values cuLaunchKernel reads; anything else keeps cuda.core's way."""
    import ctypes

    from wd_teach.fast.direct_launch import _c_values

    values = _c_values([0, 2**40, True, np.int64(7), ctypes.c_float(1.5)])
    assert [type(v) for v in values] == [ctypes.c_ssize_t, ctypes.c_ssize_t, ctypes.c_bool,
                                         ctypes.c_ssize_t, ctypes.c_float]
    assert [v.value for v in values] == [0, 2**40, True, 7, 1.5]
    assert _c_values([1, 2.5]) is None and _c_values([object()]) is None


# -- the two floors: the plain launch, and the fast floor's direct one -------------------------

NO_FAST_FLOOR = """
import sys
import wd_teach
from wd_teach.env.wrapper import EnvWrapper
from wd_teach_envs.cartpole import CartPole
for backend in ("numpy", *wd_teach.discover().backends):
    wrapper = EnvWrapper(CartPole(), 2, backend)
    wrapper.step(wrapper.random_actions())
print(sorted(m for m in sys.modules if m.startswith("wd_teach.fast")))
"""


def test_with_the_fast_floor_off_nothing_of_it_is_imported():
    """WD_TEACH_FAST=0: a wrapper steps on every backend here with nothing under
    wd_teach/fast imported (in a fresh process, where nothing else imported it first)."""
    import os
    import subprocess
    import sys

    env = {**os.environ, "WD_TEACH_FAST": "0"}
    done = subprocess.run([sys.executable, "-c", NO_FAST_FLOOR], env=env, capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip().splitlines()[-1] == "[]"


def test_off_a_gpu_numba_launches_the_plain_way_even_with_the_fast_floor_on(monkeypatch):
    """The direct launch needs a GPU: on the simulator the fast floor changes nothing, and
    the results are the plain launch's. (tests/gpu/test_launch_gpu.py holds the direct
    launch equal to the plain one on a GPU.)"""
    from wd_teach import floors

    if DataStore(1, 1).device.type == "cuda":
        pytest.skip("on a GPU the direct launch is compared in tests/gpu")
    results = []
    for fast in (True, False):
        monkeypatch.setattr(floors, "_chosen", fast)
        store = DataStore(3, 4)
        store.push("pos", np.arange(12, dtype=np.float32).reshape(3, 4))
        store.push("vel", np.ones((3, 4), np.float32))
        store.set_constant("dt", 0.5)
        launcher = KernelLauncher(store, "numba")
        launcher.load(move)
        launcher.launch("move")
        (_, call), = launcher._bound.values()
        assert type(call).__name__ != "DirectLaunch"
        results.append(store.pull("pos"))
    np.testing.assert_array_equal(*results)
