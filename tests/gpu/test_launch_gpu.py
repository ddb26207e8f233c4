"""The launcher at full size on a GPU, both backends: same answers, multi-block envs, errors."""

import numpy as np
import pytest

import wd_teach
from wd_teach import CompileError, DataStore, KernelLauncher
from wd_teach.demo import DEMO_CUDA_C, move, reference_move

BACKENDS = ["pycuda", "numba"]


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
