"""KernelLauncher: run CUDA C (PyCUDA) or Numba kernels over a DataStore, arguments by name.

The grid is the picture of the simulation: one block per environment, one thread per agent.
When an environment has more agents than a block can hold, it gets several blocks, so the
grid is (num_envs, blocks_per_env) and a thread finds itself with wd_env_id()/wd_agent_id()
(CUDA C) or env_id()/agent_id() (Numba).

Arguments are bound by name, in one place: a kernel's parameter names are looked up in the
store (arrays by pointer, constants by value). A CUDA C kernel's parameter types are read
from its source and checked against the store before the first launch, so a mismatch is a
clear Python error instead of garbage in device memory.

The launch itself is each backend's own call (wd_teach/backends): PyCUDA's prepared call,
`function.prepared_call(grid, block, *args)`, and Numba's `kernel[grid, block](*args)`. The
launcher asks its backend for everything that differs between them and keeps here what is
the same. (On a GPU the fast floor launches Numba kernels without Numba's dispatcher:
wd_teach/fast/direct_launch.py.)

Launches go to the stream torch is using at the time (`torch.cuda.current_stream()`), so a
kernel is ordered with the torch operations around it, and a whole rollout (torch, PyCUDA and
Numba work together) can be recorded as one CUDA graph on a stream made by `kernel_stream`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from wd_teach import backends, cuda_c
from wd_teach.data import DataStore
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

    What differs between them (compiling, passing an array, the launch call itself) the
    launcher asks its backend (wd_teach/backends); what is the same (binding arguments by
    the kernel's parameter names, checking C types, the grid) is here.
    """

    def __init__(self, store: DataStore, backend=None,
                 max_threads: int = MAX_THREADS_PER_BLOCK):
        if not isinstance(store, DataStore):
            raise LaunchError(f"KernelLauncher needs a DataStore, got {type(store).__name__}.")
        self.store = store
        self.backend = backends.get(backend, kernels=True)
        self.geometry = launch_geometry(store.num_envs, store.num_agents, max_threads)
        self._kernels: dict[str, object] = {}
        self._params: dict[str, list[str] | list[cuda_c.Param]] = {}
        self._bound: dict[tuple, tuple] = {}  # (name, args) -> (arguments, launch call)
        self.backend.start()

    @property
    def kernel_names(self) -> list[str]:
        return list(self._kernels)

    # -- loading ----------------------------------------------------------------------------

    def load(self, kernels, include_dirs=()) -> list[str]:
        """Compile or import kernels; returns the names now launchable.

        `include_dirs`: more folders for nvcc to find CUDA C headers in (a .cu path's own
        folder and wd_teach's are always searched); the numba backend has no use for them."""
        found = self.backend.load(kernels, include_dirs)
        if not found:
            raise LaunchError("no kernels found to load. CUDA C kernels must be declared "
                              '`extern "C" __global__ void name(...)`; Numba kernels with '
                              "@cuda.jit.")
        for name, (kernel, params) in found.items():
            self._kernels[name] = kernel
            self._params[name] = params
        return list(found)

    # -- launching --------------------------------------------------------------------------

    def launch(self, name: str, *args: str, grid: tuple[int, ...] | None = None,
               block: tuple[int, ...] | None = None) -> None:
        """Launch kernel `name`. Its arguments are its parameter names looked up in the
        store, unless `args` names them explicitly. `grid`/`block` override the geometry.
        The launch goes to torch's current stream on the store's device."""
        key = (name, args)
        bound = self._bound.get(key)
        if bound is None:
            arguments = self._bind(name, args)
            call = self.backend.launch_call(self._kernels[name], arguments, self.store.device)
            bound = self._bound[key] = (arguments, call)
        grid = tuple(grid) if grid is not None else self.geometry.grid
        block = tuple(block) if block is not None else self.geometry.block
        bound[1](grid, block, _current_stream(self.store))

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
            if isinstance(param, cuda_c.Param):  # read from CUDA C: its C type is checked
                bound.append(cuda_c_argument(self.store, name, param, arg))
            elif arg in self.store.names:
                bound.append(self.backend.array_argument(self.store[arg]))
            else:
                bound.append(self.backend.scalar_argument(
                    self._kernels[name], name, param, arg, self.store.constant(arg)))
        # Only a bind that worked freezes the store: after a failed one the learner can
        # still add what was missing.
        self.store.freeze()
        return tuple(bound)


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


def kernel_stream(backend=None):
    """A CUDA stream (a `torch.cuda.Stream`) that torch, PyCUDA and Numba all launch on.

    The default stream cannot be recorded into a CUDA graph, so a graph is captured on a
    stream of its own; inside `with torch.cuda.stream(kernel_stream(backend)):` every torch
    op and every KernelLauncher launch goes there. For PyCUDA the stream is made by PyCUDA
    and lent to torch (torch.cuda.ExternalStream); Numba can launch on any stream.
    """
    return backends.get(backend, kernels=True).stream()


def _current_stream(store: DataStore) -> int:
    """The handle of torch's current stream on the store's device (0: the default one)."""
    if store.device.type != "cuda":
        return 0
    import torch

    return torch.cuda.current_stream(store.device).cuda_stream
