"""The backends: PyCUDA, Numba and NumPy, three objects of one kind, chosen once.

    base.py    Backend: what the store, launcher, wrapper, sampler and resetter ask of one
    pycuda.py  CUDA C by nvcc, launched by PyCUDA on a GPU
    numba.py   @cuda.jit Python kernels, on a GPU or on the CUDA simulator
    numpy.py   an env's NumPy reference step on the CPU, no kernels

`get(name_or_backend)` chooses: a name ("numba"), None or "auto" ($WD_TEACH_BACKEND, else
the best that runs kernels here), or a backend already chosen, which it hands back as it
is. Whatever was built with a backend passes the same object down (a wrapper to its
launcher, sampler and resetter), so a run chooses once.

A new backend is a new file here and one line in ALL.
"""

from __future__ import annotations

import os

from wd_teach.backends.base import Backend, KernelBackend
from wd_teach.backends.numba import NumbaBackend
from wd_teach.backends.numpy import NumPyBackend
from wd_teach.backends.pycuda import PyCudaBackend
from wd_teach.errors import MissingPieceError

PYCUDA = PyCudaBackend("pycuda")
NUMBA = NumbaBackend("numba")
NUMPY = NumPyBackend("numpy")

#: THE list of backends: those that run kernels best first, then the NumPy reference.
ALL: tuple[Backend, ...] = (PYCUDA, NUMBA, NUMPY)
#: The environment variable that names the backend when a caller names none.
ENV_VAR = "WD_TEACH_BACKEND"


def kernel_backends() -> tuple[Backend, ...]:
    """The backends that run kernels, best first."""
    return tuple(b for b in ALL if b.runs_kernels)


def find(name: str, *, kernels: bool = False) -> Backend:
    """The backend called `name` (any case), whether or not it can run here; `kernels`: only
    the backends that run kernels count."""
    choices = kernel_backends() if kernels else ALL
    for backend in choices:
        if isinstance(name, str) and backend.name == name.lower():
            return backend
    raise MissingPieceError(
        f"unknown backend {name!r}: choose one of {', '.join(choices)} or 'auto'")


def get(backend: str | Backend | None = None, *, kernels: bool = False) -> Backend:
    """The backend to run on, checked once: `backend` itself if it is one already; else the
    one it names, or for None / "auto" $WD_TEACH_BACKEND or the best that runs kernels here.
    Raises MissingPieceError, saying what to do, for an unknown name or one that cannot run
    on this machine; with `kernels`, also for one that runs no kernels (NumPy)."""
    if isinstance(backend, Backend):
        if kernels and not backend.runs_kernels:
            raise MissingPieceError(f"the {backend} backend runs no kernels: choose one of "
                                    f"{', '.join(kernel_backends())}.")
        return backend
    want = backend or os.environ.get(ENV_VAR) or "auto"
    if isinstance(want, str) and want.lower() == "auto":
        return best()
    chosen = find(want, kernels=kernels)
    chosen.check()
    return chosen


def runs_kernels(backend: str | Backend | None) -> bool:
    """Whether `backend` runs kernels, asked without choosing it (None: the default, which
    on a GPU is a kernel backend)."""
    return backend is None or find(backend).runs_kernels


def reference() -> Backend:
    """The backend that runs no kernels but an env's reference step on the CPU (NumPy):
    the baseline that benchmarks and consistency checks measure the others against."""
    return next(b for b in ALL if not b.runs_kernels)


def best() -> Backend:
    """The first backend in ALL that runs kernels on this machine."""
    from wd_teach.device import discover

    usable = discover().backends
    if not usable:
        raise MissingPieceError(
            "no backend can run kernels here. Run `wd-teach doctor` to see what is missing.")
    return usable[0]


__all__ = ["ALL", "NUMBA", "NUMPY", "PYCUDA", "Backend", "KernelBackend", "best", "find",
           "get", "kernel_backends", "reference", "runs_kernels"]
