"""Backend: one way of running an env's step, and the answers the other layers ask of it.

The store, the launcher, the wrapper, the sampler and the resetter never compare a
backend's name: they ask the backend where its arrays live, whether it runs kernels, how
it loads them, how an array reaches a kernel and how a kernel is launched. So a new
backend (CuPy, cuda.core, Warp, ...) is a new file in this folder and one line in the list
of backends (wd_teach/backends/__init__.py), and nothing else changes.

A backend *is* its name: a `str` with those answers attached. `wrapper.backend == "numba"`,
a config that holds the name, and `f"{backend}"` work as they always did.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Callable
from pathlib import Path

import torch

from wd_teach.errors import MissingPieceError

#: What a launcher calls to launch one bound kernel: (grid, block, stream handle[, dynamic
#: shared memory]) -> None. The last, bytes of shared memory each block gets at launch
#: (PyCUDA's `shared_size=`, Numba's fourth launch setting), may be left out: 0.
LaunchCall = Callable[..., None]


class Backend(str):
    """A backend, named by the string it is. Subclasses answer the questions below."""

    #: How tables and figures name it ("PyCUDA"), and its colour in figures (matplotlib's).
    label: str = ""
    color: str = "tab:blue"
    #: Whether it runs kernels (PyCUDA, Numba) or an env's NumPy reference step (NumPy).
    runs_kernels: bool = True

    @property
    def name(self) -> str:
        return str(self)

    def __reduce__(self):
        """Pickled by name: unpickled (in a spawned process, say) as the listed backend."""
        return (_listed, (self.name,))

    def device(self) -> torch.device:
        """Where a store for this backend keeps its arrays."""
        from wd_teach.device import default_device

        return default_device()

    def usable(self, report) -> bool:
        """Whether it can run on the machine `report` (wd_teach.device.discover) describes."""
        raise NotImplementedError

    def why_not(self, report) -> str:
        """Why it cannot run here, and what to do: the message of the error `check` raises."""
        return f"the {self} backend cannot run on this machine. Run `wd-teach doctor`."

    def check(self) -> None:
        """Raise MissingPieceError, saying why and what to do, if it cannot run here."""
        from wd_teach.device import discover

        report = discover()
        if not self.usable(report):
            raise MissingPieceError(self.why_not(report))


def _listed(name: str) -> Backend:
    from wd_teach.backends import find

    return find(name)


class KernelBackend(Backend):
    """A backend that compiles kernels and launches them over a DataStore (KernelLauncher
    asks it everything that differs between PyCUDA and Numba)."""

    #: The kernels it loads are CUDA C (an env's step.cu, a layer's kernels.cu); otherwise
    #: they are Python (step_numba.py, kernels_numba.py).
    reads_cuda_c: bool = False

    def start(self) -> None:
        """Called when a launcher is made: raise now if the backend cannot work."""

    def load(self, kernels, include_dirs=()) -> dict[str, tuple[object, list]]:
        """Compile or import `kernels`: {name: (launchable kernel, its parameters)}. A
        parameter is a cuda_c.Param (read from CUDA C, with its C type) or a plain name."""
        raise NotImplementedError

    def env_kernels(self, env) -> list[tuple[object, tuple]]:
        """What to `load` for `env`'s step: (kernels, include_dirs) pairs."""
        raise NotImplementedError

    def layer_kernels(self, package: str):
        """What to `load` for a layer folder's kernels (`package` "wd_teach.sampler")."""
        raise NotImplementedError

    def twin_kernels(self, env, twin) -> tuple[object, tuple] | None:
        """What to `load` for a step kernel's fast twin (an env.FastKernel), as (kernels,
        include_dirs); None where this backend runs the plain kernels only."""
        return None

    def array_argument(self, tensor: torch.Tensor):
        """What a kernel receives for one of the store's arrays (no copy)."""
        raise NotImplementedError

    def scalar_argument(self, kernel, kernel_name: str, param: str, constant: str, value):
        """What a kernel receives for one of the store's constants (a plain number); raise
        LaunchError if the kernel's own code cannot read `param` as one."""
        return value

    def launch_call(self, kernel, bound: tuple, device: torch.device) -> LaunchCall:
        """A function that launches `kernel` with the arguments `bound`, made once per
        kernel and arguments and called on every launch."""
        raise NotImplementedError

    def stream(self) -> torch.cuda.Stream:
        """A CUDA stream that torch and this backend both launch on."""
        return torch.cuda.Stream()


class CudaCBackend(KernelBackend):
    """A backend whose kernels are CUDA C (an env's step.cu, a layer's kernels.cu), handed a
    store's array as its address: PyCUDA's, and the exercises' checkers' CPU runner
    (wd_teach/exercises/host_c.py)."""

    reads_cuda_c = True

    def env_kernels(self, env) -> list[tuple[object, tuple]]:
        return [(source, env.include_dirs()) for source in env.cuda_sources()]

    def twin_kernels(self, env, twin) -> tuple[object, tuple] | None:
        return (twin.cuda, env.include_dirs())

    def layer_kernels(self, package: str) -> Path:
        folder = importlib.util.find_spec(package).submodule_search_locations[0]
        return Path(folder) / "kernels.cu"

    def array_argument(self, tensor: torch.Tensor) -> int:
        return tensor.data_ptr()
