"""The launcher at full size on a GPU, both backends: same answers, multi-block envs, errors."""

import numpy as np
import pytest

import wd_teach
from wd_teach import CompileError, DataStore, KernelLauncher
from wd_teach.device import BACKENDS
from wd_teach.env.registry import find_env, shipped_envs
from wd_teach.lessons.demo import DEMO_CUDA_C, move, reference_move


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("envs, agents", [(2_000, 256), (100, 1_000), (10, 5_000)])
def test_full_size_step_matches_numpy(backend, envs, agents):
    rng = np.random.default_rng(envs + agents)
    pos = rng.normal(size=(envs, agents)).astype(np.float32)
    vel = rng.normal(size=(envs, agents)).astype(np.float32)
    store = DataStore(envs, agents)
    store.push("pos", pos)
    store.push("vel", vel)
    store.set_constant("dt", 0.25)
    launcher = KernelLauncher(store, backend)
    launcher.load(DEMO_CUDA_C if backend == "pycuda" else move)
    for _ in range(3):
        launcher.launch("move")
    want = pos
    for _ in range(3):
        want = reference_move(want, vel, 0.25)
    np.testing.assert_allclose(store.pull("pos"), want, rtol=1e-5, atol=1e-6)
    assert launcher.geometry.blocks_per_env == -(-agents // 1024)


def test_both_backends_give_identical_results():
    results = []
    for backend in BACKENDS:
        store = DataStore(500, 300)
        rng = np.random.default_rng(7)
        store.push("pos", rng.normal(size=(500, 300)).astype(np.float32))
        store.push("vel", rng.normal(size=(500, 300)).astype(np.float32))
        store.set_constant("dt", 0.1)
        launcher = KernelLauncher(store, backend)
        launcher.load(DEMO_CUDA_C if backend == "pycuda" else move)
        launcher.launch("move")
        results.append(store.pull("pos"))
    np.testing.assert_array_equal(*results)


def test_pycuda_compile_error_shows_nvcc_message_and_line():
    store = DataStore(2, 3)
    launcher = KernelLauncher(store, "pycuda")
    bad = DEMO_CUDA_C.replace("vel[i] * dt", "vel[i] * delta")
    with pytest.raises(CompileError, match=r'line \d+: error: identifier "delta" is undefined'):
        launcher.load(bad)


def test_pycuda_compiles_once_per_source():
    from wd_teach import cuda_c

    store = DataStore(2, 3)
    launcher = KernelLauncher(store, "pycuda")
    launcher.load(DEMO_CUDA_C)
    first = cuda_c.compile_module(DEMO_CUDA_C)
    assert cuda_c.compile_module(DEMO_CUDA_C) is first


def test_too_much_memory_is_refused_before_allocating(monkeypatch):
    import torch

    store = DataStore(100, 100)
    monkeypatch.setattr(torch.cuda, "mem_get_info", lambda device=None: (30_000, 80 * 2**30))
    with pytest.raises(wd_teach.StoreError, match="needs 0.00 GiB on the GPU but only"):
        store.push("pos", np.zeros((100, 100), np.float32))
    assert store.names == []


# -- the direct Numba launch (wd_teach.fast.direct_launch) --------------------------------------


def _short_game(env_class):
    """The env with 5-step episodes where it has an episode length, so resets happen."""
    try:
        return env_class(episode_length=5)
    except TypeError:
        return env_class()


def _stepped_store(env_class, fast: bool, monkeypatch, actions=None, driver: bool = True):
    """Every array of a 50-env store after 12 steps of one set of random actions (resets
    included), with the fast floor on (Numba kernels launched directly: by cuLaunchKernel,
    or by cuda.core if not `driver`) or off (Numba's own launch); and the actions used."""
    import torch

    from wd_teach import floors
    from wd_teach.env.wrapper import EnvWrapper
    from wd_teach.fast.direct_launch import DirectLaunch

    monkeypatch.setattr(floors, "_chosen", fast)  # set_fast(fast), undone after the test
    wrapper = EnvWrapper(_short_game(env_class), 50, "numba")
    wrapper.reset()
    if actions is None:
        actions = wrapper.random_actions()
    for _ in range(12):
        wrapper.step(actions.clone())
    torch.cuda.synchronize()
    calls = {key: call for launcher in (wrapper.launcher, wrapper._resetter.launcher)
             for key, (_, call) in launcher._bound.items()}
    direct = {key for key, call in calls.items() if isinstance(call, DirectLaunch)}
    if fast:  # every kernel of the env and of the reset went the direct way
        assert calls and direct == set(calls), (
            f"kernels launched the plain way: {sorted(set(calls) - direct)}")
        assert all((calls[k].handle is not None) == driver for k in direct)  # which call
    else:
        assert not direct, "the fast floor was used while it was off"
    return {name: wrapper.store.pull(name) for name in wrapper.store.names}, actions


@pytest.mark.parametrize("name", sorted(shipped_envs()))
def test_direct_numba_launch_is_the_plain_launch(name, monkeypatch):
    """The fast floor's launch (wd_teach/fast/direct_launch.py) leaves every array of every
    shipped env exactly as Numba's own launch does, and it is the path actually taken."""
    env_class = find_env(name).env_class
    direct, actions = _stepped_store(env_class, True, monkeypatch)
    with monkeypatch.context() as patch:
        plain, _ = _stepped_store(env_class, False, patch, actions)
    assert direct.keys() == plain.keys()
    for key in direct:
        np.testing.assert_array_equal(direct[key], plain[key], err_msg=key)


def test_the_direct_launch_without_the_driver_library_uses_cuda_core(monkeypatch):
    """Where libcuda cannot be opened by name, the direct launch goes through cuda.core's
    launch instead, with the same result."""
    from wd_teach.fast import direct_launch

    env_class = find_env("tag_continuous").env_class
    by_driver, actions = _stepped_store(env_class, True, monkeypatch)
    with monkeypatch.context() as patch:
        patch.setattr(direct_launch, "_driver_launch", lambda: None)
        by_core, _ = _stepped_store(env_class, True, patch, actions, driver=False)
    for key in by_driver:
        np.testing.assert_array_equal(by_driver[key], by_core[key], err_msg=key)


def test_a_direct_launch_the_driver_refuses_says_why(monkeypatch):
    """A block of 2,048 threads (the limit is 1,024): the driver's error, by name."""
    import torch

    from wd_teach import floors
    from wd_teach.env.wrapper import EnvWrapper
    from wd_teach.errors import LaunchError

    monkeypatch.setattr(floors, "_chosen", True)  # the fast floor's launch
    wrapper = EnvWrapper(_short_game(find_env("tag_continuous").env_class), 4, "numba")
    kernel = wrapper.env.step_kernels[0]
    with pytest.raises(LaunchError, match="the kernel launch failed: CUDA_ERROR_INVALID_VALUE"):
        wrapper.launcher.launch(kernel, block=(2048, 1, 1))
    torch.cuda.synchronize()
