"""KernelLauncher: run CUDA C (PyCUDA) or Numba kernels over a DataStore, arguments by name.

The grid is the picture of the simulation: one block per environment, one thread per agent.
When an environment has more agents than a block can hold, it gets several blocks, so the
grid is (num_envs, blocks_per_env) and a thread finds itself with wd_env_id()/wd_agent_id()
(CUDA C) or env_id()/agent_id() (Numba).

Arguments are bound by name, in one place: a kernel's parameter names are looked up in the
store (arrays by pointer, constants by value). A CUDA C kernel's parameter types are read
from its source and checked against the store before the first launch, so a mismatch is a
clear Python error instead of garbage in device memory.

Launches go to the stream torch is using at the time (`torch.cuda.current_stream()`), so a
kernel is ordered with the torch operations around it, and a whole rollout (torch, PyCUDA and
Numba work together) can be recorded as one CUDA graph on a stream made by `kernel_stream`.
"""

from __future__ import annotations

import contextlib
import importlib.util
import inspect
import math
import os
import threading
import types
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from wd_teach import cuda_c
from wd_teach.data import DataStore
from wd_teach.device import choose_backend
from wd_teach.errors import LaunchError

#: Threads per block on every GPU since compute capability 2.0.
MAX_THREADS_PER_BLOCK = 1024
#: Blocks along the grid's y axis (the blocks of one environment).
MAX_GRID_Y = 65_535
MAX_GRID_X = 2**31 - 1


@dataclass(frozen=True)
class Geometry:
    """The launch shape: grid (num_envs, blocks_per_env) of blocks of `threads` threads."""

    grid: tuple[int, int]
    block: tuple[int, int, int]

    @property
    def blocks_per_env(self) -> int:
        return self.grid[1]

    @property
    def threads(self) -> int:
        return self.block[0]


def launch_geometry(num_envs: int, num_agents: int,
                    max_threads: int = MAX_THREADS_PER_BLOCK) -> Geometry:
    """One block per environment and one thread per agent, split over several blocks when
    the agents do not fit in one."""
    if not 1 <= max_threads <= MAX_THREADS_PER_BLOCK:
        raise LaunchError(f"threads per block must be between 1 and {MAX_THREADS_PER_BLOCK}, "
                          f"got {max_threads}.")
    if num_envs > MAX_GRID_X:
        raise LaunchError(f"{num_envs:,} environments exceed the grid's {MAX_GRID_X:,} blocks "
                          "along x. Use fewer environments.")
    threads = min(num_agents, max_threads)
    blocks_per_env = math.ceil(num_agents / threads)
    if blocks_per_env > MAX_GRID_Y:
        raise LaunchError(f"{num_agents:,} agents per environment need {blocks_per_env:,} "
                          f"blocks of {threads}, more than the {MAX_GRID_Y:,} a grid allows "
                          f"(at most {MAX_GRID_Y * threads:,} agents). Use fewer agents.")
    return Geometry((num_envs, blocks_per_env), (threads, 1, 1))


class KernelLauncher:
    """Load kernels for one backend and launch them by name over a DataStore.

    pycuda: `load()` takes CUDA C source text or a .cu path.
    numba:  `load()` takes @cuda.jit kernels, a dict of them, a module or a .py path.
    """

    def __init__(self, store: DataStore, backend: str | None = None,
                 max_threads: int = MAX_THREADS_PER_BLOCK):
        if not isinstance(store, DataStore):
            raise LaunchError(f"KernelLauncher needs a DataStore, got {type(store).__name__}.")
        self.store = store
        self.backend = choose_backend(backend)
        self.geometry = launch_geometry(store.num_envs, store.num_agents, max_threads)
        self._kernels: dict[str, object] = {}
        self._params: dict[str, list[str] | list[cuda_c.Param]] = {}
        self._bound: dict[tuple, tuple] = {}
        self._direct: dict[tuple, object] = {}  # numba on a GPU: see wd_teach.fast
        if self.backend == "pycuda":
            cuda_c.require_pycuda()

    @property
    def kernel_names(self) -> list[str]:
        return list(self._kernels)

    # -- loading ----------------------------------------------------------------------------

    def load(self, kernels, include_dirs=()) -> list[str]:
        """Compile or import kernels; returns the names now launchable.

        `include_dirs`: more folders for nvcc to find CUDA C headers in (a .cu path's own
        folder and wd_teach's are always searched); the numba backend has no use for them."""
        if self.backend == "pycuda":
            found = self._load_cuda_c(kernels, include_dirs)
        else:
            found = self._load_numba(kernels)
        if not found:
            raise LaunchError("no kernels found to load. CUDA C kernels must be declared "
                              '`extern "C" __global__ void name(...)`; Numba kernels with '
                              "@cuda.jit.")
        return found

    def _load_cuda_c(self, source, include_dirs=()) -> list[str]:
        if not isinstance(source, (str, os.PathLike)):
            raise LaunchError("the pycuda backend loads CUDA C (source text or a .cu path), "
                              f"not {type(source).__name__}. Numba kernels need "
                              "backend='numba'.")
        text = cuda_c.read_source(source)
        signatures = cuda_c.kernel_signatures(text)
        module = cuda_c.compile_module(text, cuda_c.include_dirs(source, include_dirs))
        for name, params in signatures.items():
            function = module.get_function(name)
            function.prepare("".join(p.struct_format for p in params))
            self._kernels[name] = function
            self._params[name] = params
        return list(signatures)

    def _load_numba(self, kernels) -> list[str]:
        if isinstance(kernels, (str, os.PathLike)):
            if not str(kernels).endswith(".py"):
                raise LaunchError("the numba backend loads @cuda.jit kernels (functions, a "
                                  "module or a .py path), not CUDA C. CUDA C needs "
                                  "backend='pycuda'.")
            kernels = _import_path(Path(kernels))
        if isinstance(kernels, types.ModuleType):
            kernels = vars(kernels)
        if isinstance(kernels, dict):
            items = {n: k for n, k in kernels.items() if _is_numba_kernel(k)}
        else:
            items = {}
            for kernel in (kernels if isinstance(kernels, (list, tuple)) else [kernels]):
                if not _is_numba_kernel(kernel):
                    raise LaunchError(_not_a_kernel(kernel))
                items[kernel.py_func.__name__] = kernel
        for name, kernel in items.items():
            self._kernels[name] = kernel
            self._params[name] = list(inspect.signature(kernel.py_func).parameters)
        return list(items)

    # -- launching --------------------------------------------------------------------------

    def launch(self, name: str, *args: str, grid: tuple[int, ...] | None = None,
               block: tuple[int, ...] | None = None) -> None:
        """Launch kernel `name`. Its arguments are its parameter names looked up in the
        store, unless `args` names them explicitly. `grid`/`block` override the geometry.
        The launch goes to torch's current stream on the store's device."""
        key = (name, args)
        bound = self._bound.get(key)
        if bound is None:
            bound = self._bind(name, args)
            self._bound[key] = bound
        grid = tuple(grid) if grid is not None else self.geometry.grid
        block = tuple(block) if block is not None else self.geometry.block
        kernel = self._kernels[name]
        stream = _current_stream(self.store)
        if self.backend == "pycuda":
            if stream == 0:
                kernel.prepared_call(_dim3(grid), _dim3(block), *bound)
            else:
                kernel.prepared_async_call(_dim3(grid), _dim3(block), _pycuda_stream(stream),
                                           *bound)
        elif self.store.device.type != "cuda":  # the simulator
            with _simulator_turn(self.store):
                kernel[grid, block](*bound)
        else:
            direct = self._direct.get(key)
            if direct is None:
                from wd_teach.fast.direct_launch import _DirectLaunch

                direct = self._direct[key] = _DirectLaunch.make(kernel, bound)
            if direct:
                direct(grid, block, stream)
            elif stream == 0:  # a kernel the direct path does not cover: the dispatcher
                kernel[grid, block](*bound)
            else:
                kernel[grid, block, _numba_stream(stream)](*bound)

    __call__ = launch

    def _bind(self, name: str, args: tuple[str, ...]) -> tuple:
        """Look arguments up once; every later launch reuses the same pointers."""
        if name not in self._kernels:
            raise LaunchError(f"no kernel named {name!r} is loaded. Loaded: "
                              f"{', '.join(self._kernels) or 'none'}; call load() first.")
        params = self._params[name]
        names = list(args) if args else [p.name if isinstance(p, cuda_c.Param) else p
                                         for p in params]
        if len(names) != len(params):
            raise LaunchError(f"kernel {name!r} takes {len(params)} arguments, "
                              f"{len(names)} were named.")
        bound = []
        for param, arg in zip(params, names, strict=True):
            if arg not in self.store:
                raise LaunchError(f"kernel {name!r} needs {arg!r}, but the store has no array "
                                  f"or constant of that name. Arrays: "
                                  f"{', '.join(self.store.names) or 'none'}; constants: "
                                  f"{', '.join(self.store.constants)}.")
            if isinstance(param, cuda_c.Param):
                bound.append(cuda_c_argument(self.store, name, param, arg))
            else:
                bound.append(self._numba_arg(arg))
        # Only a bind that worked freezes the store: after a failed one the learner can
        # still add what was missing.
        self.store.freeze()
        return tuple(bound)

    def _numba_arg(self, arg: str):
        if arg not in self.store.names:
            return self.store.constant(arg)
        tensor = self.store[arg]
        if tensor.is_cuda:
            from numba import cuda

            return cuda.as_cuda_array(tensor)
        return tensor.numpy()  # the simulator reads the CPU tensor's own memory


def cuda_c_argument(store: DataStore, kernel: str, param: cuda_c.Param, arg: str):
    """The value PyCUDA passes for `param` of `kernel`: a device pointer or a typed scalar,
    after checking that the store's `arg` is what the C signature says it reads."""
    is_array = arg in store.names
    if param.pointer != is_array:
        have = "an array" if is_array else "a constant"
        want = f"a pointer ({param.ctype}*)" if param.pointer else f"a scalar ({param.ctype})"
        raise LaunchError(f"kernel {kernel!r} parameter {param.name!r} is {want}, but {arg!r} "
                          f"is {have} in the store.")
    if param.pointer:
        dtype = store.info(arg).dtype
        if dtype.name != cuda_c.POINTER_TYPES[param.ctype]:
            raise LaunchError(f"kernel {kernel!r} reads {param.name!r} as {param.ctype}*, but "
                              f"{arg!r} holds {dtype.name}. Change the kernel or push the array "
                              f"as {cuda_c.POINTER_TYPES[param.ctype]}.")
        return store[arg].data_ptr()
    value = store.constant(arg)
    if param.ctype != "float" and isinstance(value, np.float32):
        raise LaunchError(f"kernel {kernel!r} takes {param.name!r} as {param.ctype}, but "
                          f"constant {arg!r} is a float ({value}).")
    if param.ctype == "unsigned int" and value < 0:
        raise LaunchError(f"kernel {kernel!r} takes {param.name!r} as unsigned int, but "
                          f"constant {arg!r} is negative ({value}).")
    return {"int": np.int32, "unsigned int": np.uint32, "float": np.float32}[param.ctype](value)


# -- streams ----------------------------------------------------------------------------------

#: Streams that PyCUDA can launch on, by handle: PyCUDA cannot adopt a stream it did not make.
_PYCUDA_STREAMS: dict[int, object] = {}
_NUMBA_STREAMS: dict[int, object] = {}


def kernel_stream(backend: str | None = None):
    """A CUDA stream (a `torch.cuda.Stream`) that torch, PyCUDA and Numba all launch on.

    The default stream cannot be recorded into a CUDA graph, so a graph is captured on a
    stream of its own; inside `with torch.cuda.stream(kernel_stream(backend)):` every torch
    op and every KernelLauncher launch goes there. For PyCUDA the stream is made by PyCUDA
    and lent to torch (torch.cuda.ExternalStream); Numba can launch on any stream.
    """
    import torch

    backend = choose_backend(backend)
    if backend == "pycuda":
        driver = cuda_c.require_pycuda()
        stream = driver.Stream()
        _PYCUDA_STREAMS[stream.handle] = stream
        return torch.cuda.ExternalStream(stream.handle)
    return torch.cuda.Stream()


def _current_stream(store: DataStore) -> int:
    """The handle of torch's current stream on the store's device (0: the default one)."""
    if store.device.type != "cuda":
        return 0
    import torch

    return torch.cuda.current_stream(store.device).cuda_stream


def _pycuda_stream(handle: int):
    stream = _PYCUDA_STREAMS.get(handle)
    if stream is None:
        raise LaunchError("a PyCUDA kernel was launched while torch's current stream is one "
                          "PyCUDA did not make. Launch on the default stream, or on a stream "
                          "from wd_teach.launch.kernel_stream('pycuda').")
    return stream


def _numba_stream(handle: int):
    stream = _NUMBA_STREAMS.get(handle)
    if stream is None:
        from numba import cuda

        stream = _NUMBA_STREAMS[handle] = cuda.external_stream(handle)
    return stream


#: One simulated launch at a time: Numba's CUDA simulator keeps the current thread's
#: blockIdx and threadIdx in state shared by the whole process, so two Python threads that
#: launched at once would read each other's (AttributeError: 'Thread' object has no
#: attribute 'blockIdx'). On a GPU launches are asynchronous and need no lock.
_SIMULATOR_LOCK = threading.Lock()


def _simulator_turn(store: DataStore):
    """The lock that serialises simulated launches, or a no-op on a GPU."""
    return _SIMULATOR_LOCK if store.device.type != "cuda" else contextlib.nullcontext()


def _dim3(dims: tuple[int, ...]) -> tuple[int, int, int]:
    return tuple(dims) + (1,) * (3 - len(dims))


def _is_numba_kernel(obj) -> bool:
    """A @cuda.jit kernel (on a GPU or on the simulator), not a device function."""
    if not hasattr(obj, "py_func"):
        return False
    options = getattr(obj, "targetoptions", None) or {}
    return not (options.get("device") or getattr(obj, "_device", False))


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
