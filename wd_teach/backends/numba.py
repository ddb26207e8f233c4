"""The Numba backend: Python kernels (@cuda.jit) on an NVIDIA GPU, or on the CUDA simulator.

A kernel receives a store's array as `numba.cuda.as_cuda_array(tensor)`, a view of the
memory torch owns (on the simulator: the CPU tensor's own NumPy view). A launch is Numba's
own, `kernel[grid, block, stream, shared](*args)` (shared: bytes of dynamic shared memory a
block gets). On a GPU, with the fast floor on
(wd_teach.floors), a launch skips Numba's dispatcher: wd_teach/fast/direct_launch.py.
"""

from __future__ import annotations

import ast
import functools
import importlib
import importlib.util
import inspect
import os
import textwrap
import threading
import types
from pathlib import Path

import torch

from wd_teach.backends.base import KernelBackend, LaunchCall
from wd_teach.errors import LaunchError
from wd_teach.floors import fast_floor

#: One simulated launch at a time: Numba's CUDA simulator keeps the current thread's
#: blockIdx and threadIdx in state shared by the whole process, so two Python threads that
#: launched at once would read each other's (AttributeError: 'Thread' object has no
#: attribute 'blockIdx'). On a GPU launches are asynchronous and need no lock.
_SIMULATOR_LOCK = threading.Lock()
#: Numba's handles on torch's streams, by handle.
_STREAMS: dict[int, object] = {}


class NumbaBackend(KernelBackend):
    label = "Numba"
    color = "tab:purple"
    reads_cuda_c = False

    def usable(self, report) -> bool:
        return bool(report.numba_cuda) and (report.has_gpu or report.simulator)

    def why_not(self, report) -> str:
        from wd_teach.device import NUMBA_INSTALL

        return ("the numba backend needs numba-cuda and either a GPU or the CUDA simulator: "
                f"{NUMBA_INSTALL}, or set NUMBA_ENABLE_CUDASIM=1 before "
                "numba is imported. Run `wd-teach doctor` for details.")

    def load(self, kernels, include_dirs=()) -> dict[str, tuple[object, list]]:
        if isinstance(kernels, (str, os.PathLike)):
            if not str(kernels).endswith(".py"):
                raise LaunchError("the numba backend loads @cuda.jit kernels (functions, a "
                                  "module or a .py path), not CUDA C. CUDA C needs "
                                  "backend='pycuda'.")
            kernels = _import_path(Path(kernels))
        if isinstance(kernels, types.ModuleType):
            kernels = vars(kernels)
        if isinstance(kernels, dict):
            items = {n: k for n, k in kernels.items() if is_numba_kernel(k)}
        else:
            items = {}
            for kernel in (kernels if isinstance(kernels, (list, tuple)) else [kernels]):
                if not is_numba_kernel(kernel):
                    raise LaunchError(_not_a_kernel(kernel))
                items[kernel.py_func.__name__] = kernel
        return {name: (kernel, list(inspect.signature(kernel.py_func).parameters))
                for name, kernel in items.items()}

    def env_kernels(self, env) -> list[tuple[object, tuple]]:
        return [(env.numba_kernels(), ())]

    def twin_kernels(self, env, twin) -> tuple[object, tuple] | None:
        return (env.numba_twin(twin), ())

    def layer_kernels(self, package: str) -> types.ModuleType:
        return importlib.import_module(f"{package}.kernels_numba")

    def array_argument(self, tensor: torch.Tensor):
        if tensor.is_cuda:
            from numba import cuda

            return cuda.as_cuda_array(tensor)
        return tensor.numpy()  # the simulator reads the CPU tensor's own memory

    def scalar_argument(self, kernel, kernel_name: str, param: str, constant: str, value):
        """A constant arrives as one number. A kernel that indexes it (`dt[0]`) would fail
        only when it runs, in Numba's words ("invalid index to scalar variable" on the
        simulator, a typing error on a GPU), so its code is read for that first."""
        if param in indexed_parameters(kernel):
            raise LaunchError(
                f"kernel {kernel_name!r} indexes its parameter {param!r} ({param}[...]), but "
                f"{constant!r} is a constant in the store, a single number ({value:g}), not an "
                f"array. Read it as plain `{param}` in the kernel, or push an array under "
                f"that name instead of set_constant().")
        return value

    def launch_call(self, kernel, bound: tuple, device: torch.device) -> LaunchCall:
        if device.type != "cuda":  # the simulator
            def simulated(grid: tuple, block: tuple, stream: int, shared: int = 0) -> None:
                with _SIMULATOR_LOCK:
                    kernel[grid, block, 0, shared](*bound)

            return simulated
        if fast_floor(device):
            from wd_teach.fast.direct_launch import DirectLaunch

            direct = DirectLaunch.make(kernel, bound)
            if direct:
                return direct

        def launch(grid: tuple, block: tuple, stream: int, shared: int = 0) -> None:
            if stream == 0 and shared == 0:
                kernel[grid, block](*bound)
            else:
                kernel[grid, block, numba_stream(stream) if stream else 0, shared](*bound)

        return launch


def numba_stream(handle: int):
    """Numba's handle on torch's stream `handle`."""
    stream = _STREAMS.get(handle)
    if stream is None:
        from numba import cuda

        stream = _STREAMS[handle] = cuda.external_stream(handle)
    return stream


def is_numba_kernel(obj) -> bool:
    """A @cuda.jit kernel (on a GPU or on the simulator), not a device function."""
    if not hasattr(obj, "py_func"):
        return False
    options = getattr(obj, "targetoptions", None) or {}
    return not (options.get("device") or getattr(obj, "_device", False))


def indexed_parameters(kernel) -> frozenset[str]:
    """The parameters of `kernel` that its code indexes (`name[...]`), read from its source;
    none when the source cannot be found (a kernel built at run time), so nothing is
    refused that cannot be seen."""
    return _indexed_parameters(kernel.py_func)


@functools.cache
def _indexed_parameters(function) -> frozenset[str]:
    """Per Python function (always hashable, where a dispatcher may not be)."""
    try:
        tree = ast.parse(textwrap.dedent(inspect.getsource(function)))
    except (OSError, TypeError, SyntaxError):
        return frozenset()
    params = set(inspect.signature(function).parameters)
    return frozenset(node.value.id for node in ast.walk(tree)
                     if isinstance(node, ast.Subscript) and isinstance(node.value, ast.Name)
                     and node.value.id in params)


def _not_a_kernel(obj) -> str:
    """Why `obj` cannot be loaded as a Numba kernel, naming it by its function's name (its
    repr is an object address, which tells a learner nothing), and what to pass instead."""
    function = getattr(obj, "py_func", obj)
    name = getattr(function, "__name__", None)
    if name is None:
        return (f"got a value of type {type(obj).__name__}, not a Numba kernel: pass @cuda.jit "
                "kernels (one, a list of them, a module or a .py path).")
    if hasattr(obj, "py_func"):  # a Numba function, so a device function
        return (f"{name} is a Numba device function (@cuda.jit(device=True)): a helper that "
                "only code already on the GPU calls, not a kernel that can be launched. Load "
                f"the @cuda.jit kernel that calls {name}; or, if {name} is meant to be the "
                "kernel, decorate it with plain @cuda.jit and have it write its results into "
                "an array instead of returning them.")
    return f"{name} is not a Numba kernel: decorate it with @cuda.jit."


def _import_path(path: Path) -> types.ModuleType:
    if not path.is_file():
        raise LaunchError(f"no Python file at {path}.")
    spec = importlib.util.spec_from_file_location(f"_wd_teach_kernels_{path.stem}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
