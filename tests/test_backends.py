"""The backend seam (wd_teach/backends): a backend is chosen once and asked, never compared.

A new backend is one file and one line in the list: the fakes below are registered only
through `backends.ALL`, and the wrapper, its store, launcher, sampler and resetter use them
with no other edit."""

import pickle

import numpy as np
import pytest
import torch

from wd_teach import backends
from wd_teach.backends.base import Backend
from wd_teach.backends.numba import NumbaBackend
from wd_teach.data import DataStore
from wd_teach.env.wrapper import EnvWrapper
from wd_teach.errors import MissingPieceError
from wd_teach.launch import KernelLauncher
from wd_teach.sampler.sampler import Sampler
from wd_teach_envs.cartpole import CartPole


class ReferenceOnly(Backend):
    """A NumPy-like backend that notes where the store asked it to live."""

    label = "Reference only"
    runs_kernels = False
    asked: list

    def device(self) -> torch.device:
        self.asked.append("device")
        return torch.device("cpu")

    def usable(self, report) -> bool:
        return True


class CountingNumba(NumbaBackend):
    """Numba under another name, counting every kernel it is asked to launch-prepare."""

    label = "Numba, counted"
    prepared: list

    def launch_call(self, kernel, bound, device):
        self.prepared.append(kernel.py_func.__name__)
        return super().launch_call(kernel, bound, device)


@pytest.fixture
def registered(monkeypatch):
    """The two fakes, added to the list of backends (and only there)."""
    reference, counting = ReferenceOnly("reference_only"), CountingNumba("counting_numba")
    reference.asked, counting.prepared = [], []
    monkeypatch.setattr(backends, "ALL", (*backends.ALL, reference, counting))
    return reference, counting


def _steps(wrapper: EnvWrapper, steps: int = 6) -> np.ndarray:
    """The observations after each of `steps` steps of one fixed sequence of actions."""
    rng = np.random.default_rng(1)
    shape = wrapper.env.action_shape(wrapper.num_envs)
    out = []
    for _ in range(steps):
        obs, *_ = wrapper.step(rng.integers(0, 2, shape).astype(np.int32))
        out.append(obs.cpu().numpy().copy())
    return np.stack(out)


def test_a_new_reference_backend_steps_an_env_through_the_list_alone(registered):
    reference, _ = registered
    wrapper = EnvWrapper(CartPole(), 3, "reference_only", seed=4)
    assert wrapper.backend is reference and wrapper.store.device == torch.device("cpu")
    assert reference.asked == ["device"]  # the store's place came from the backend
    np.testing.assert_array_equal(_steps(wrapper), _steps(EnvWrapper(CartPole(), 3, "numpy",
                                                                     seed=4)))


def test_a_new_kernel_backend_is_handed_down_and_asked(registered, monkeypatch):
    """Chosen once by the wrapper; its launcher, resetter and a sampler on its store get
    the same object; every kernel launch is prepared by it."""
    _, counting = registered
    checks = []
    monkeypatch.setattr(Backend, "check", lambda self: checks.append(str(self)))
    wrapper = EnvWrapper(CartPole(), 3, "counting_numba", seed=4)
    sampler = Sampler(DataStore(3, 1), 2, backend=wrapper.backend)
    assert checks == ["counting_numba"]  # chosen (and checked) once, not per layer
    assert wrapper.backend is counting
    assert wrapper.launcher.backend is wrapper._resetter.backend is sampler.backend is counting
    steps = _steps(wrapper)
    assert set(wrapper.env.step_kernels) <= set(counting.prepared)
    assert any(name.startswith("reset_") for name in counting.prepared)  # the resetter's
    np.testing.assert_array_equal(steps, _steps(EnvWrapper(CartPole(), 3, "numba", seed=4)))


def test_a_backend_is_its_name():
    """Code and notebooks that compare or print the name keep working."""
    numba = backends.get("numba")
    assert numba == "numba" and numba.name == "numba" and f"{numba}" == "numba"
    assert repr(numba) == "'numba'" and {"numba": 1}[numba] == 1
    assert backends.get(numba) is numba and backends.get("NUMBA") is numba
    assert pickle.loads(pickle.dumps(numba)) is numba  # a spawned process gets the same


def test_unknown_and_kernelless_backends_are_refused_clearly(monkeypatch):
    with pytest.raises(MissingPieceError, match="unknown backend 'cupy': choose one of "
                                                "pycuda, numba, numpy or 'auto'"):
        backends.get("cupy")
    with pytest.raises(MissingPieceError, match="unknown backend 'numpy': choose one of "
                                                "pycuda, numba or 'auto'"):
        KernelLauncher(DataStore(2, 2), "numpy")
    with pytest.raises(MissingPieceError, match="the numpy backend runs no kernels"):
        KernelLauncher(DataStore(2, 2), backends.NUMPY)
    monkeypatch.setenv("WD_TEACH_BACKEND", "numpy")
    assert backends.get() is backends.NUMPY  # a wrapper may take the NumPy reference ...
    with pytest.raises(MissingPieceError, match="unknown backend 'numpy'"):
        backends.get(kernels=True)  # ... a launcher may not


def test_every_kernel_backend_answers_every_question():
    """What the launcher, wrapper, sampler and resetter ask of a kernel backend."""
    questions = ["start", "load", "env_kernels", "layer_kernels", "array_argument",
                 "launch_call", "stream", "device", "usable", "why_not"]
    for backend in backends.kernel_backends():
        assert backend.label and backend.runs_kernels
        for question in questions:
            assert callable(getattr(backend, question)), (backend, question)
    assert backends.PYCUDA.layer_kernels("wd_teach.sampler").name == "kernels.cu"
    assert backends.NUMBA.layer_kernels("wd_teach.reset").__name__ == "wd_teach.reset.kernels_numba"
