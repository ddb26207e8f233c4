"""The direct Numba launch: `cuLaunchKernel` through ctypes, arguments packed once.

Fast floor (wd_teach.floors). It replaces the plain floor's Numba launch,
`NumbaBackend.launch_call` in wd_teach/backends/numba.py, which calls Numba's own
`kernel[grid, block, stream](*args)`: on every call Numba's dispatcher types each argument,
looks the compiled kernel up and turns each array into its C fields again. Here that is
done once per kernel and arguments, and a launch is one call into the driver, as PyCUDA's
prepared call is.

What it gained (bench/NOTES.md, round four, item 13; H100, `bench/env_step_backends.py`):
the env step alone on Numba went from 84% / 78% / 86% of PyCUDA's rate to 101% / 86% / 90%
at 100 / 500 / 1,000 envs. Inside a training iteration the two backends stay within 1-4%
of each other either way, because CUDA graphs replay the launches.

It reads numba-cuda 0.30's private internals (`_Kernel._prepare_args`, `_codelibrary`) and
falls back to the plain launch where they differ, and for what it does not cover (debug or
cooperative kernels, host arrays). It is used for Numba kernels on a GPU when
`fast_floor(device)` is on. A GPU test (tests/gpu/test_launch_gpu.py) holds it equal to the
plain launch, array for array.
"""

from __future__ import annotations

import ctypes
import functools

import numpy as np

from wd_teach.errors import LaunchError


class DirectLaunch:
    """A Numba kernel launched without its dispatcher, on a GPU.

    `kernel[grid, block, stream](*args)` types every argument, looks the compiled kernel up
    and turns each array into its C fields (data pointer, shape, strides, ...) on every
    call: some 100 microseconds of Python for a kernel of twenty arrays, several times the
    kernel's own run time at workshop sizes. A launcher's arguments never change (the store
    is frozen once a kernel is bound, so every pointer stays put), so all of that is done
    once here, and a launch is one call into the driver, as a PyCUDA prepared call is.

    That call is `cuLaunchKernel` itself, through ctypes, with the array of argument
    pointers made once. (cuda.core's `launch`, which Numba uses, converts every argument
    again on each call; it stays the fallback where the driver library cannot be opened by
    name.)
    """

    __slots__ = ("kernel", "args", "configs", "handle", "params")

    def __init__(self, kernel, args: list, handle: int | None = None):
        self.kernel, self.args, self.configs = kernel, args, {}
        values = _c_values(args)
        self.handle = (handle if values is not None and _driver_launch() is not None
                       else None)
        self.params = None
        if self.handle is not None:
            self.args = values  # kept alive: params points into them
            self.params = (ctypes.c_void_p * len(values))(
                *[ctypes.addressof(v) for v in values])

    @classmethod
    def make(cls, dispatcher, bound: tuple):
        """The direct launch of `dispatcher` with `bound`, or False where Numba's own path
        must run: a debug or cooperative kernel, one sensitive to its launch geometry, or a
        numba-cuda whose internals differ from the ones this was written for (0.30)."""
        try:
            argtypes = tuple(dispatcher.typeof_pyval(a) for a in bound)
            compiled = dispatcher.compile(argtypes)
            if (compiled.debug or compiled.cooperative
                    or getattr(compiled, "launch_config_sensitive", False)
                    or getattr(dispatcher, "_launch_config_sensitive", False)):
                return False
            args, writeback = [], []
            for ty, value in zip(compiled.argument_types, bound, strict=True):
                compiled._prepare_args(ty, value, 0, writeback, args)
            if writeback:  # host arrays copied in and out on every call: not ours to skip
                return False
            cufunc = compiled._codelibrary.get_cufunc()
            return cls(cufunc.kernel, args, _handle(cufunc))
        except (AttributeError, TypeError, ImportError):
            return False

    def __call__(self, grid: tuple, block: tuple, stream: int, shared: int = 0) -> None:
        if self.handle is not None:
            g, b = (*grid, 1, 1)[:3], (*block, 1, 1)[:3]
            error = _driver_launch()(self.handle, *g, *b, shared, stream, self.params, None)
            if error:
                raise LaunchError(f"the kernel launch failed: {_driver_error(error)} "
                                  f"(grid {grid}, block {block}, {shared} bytes of dynamic "
                                  "shared memory).")
            return
        from cuda.core import LaunchConfig, launch

        config = self.configs.get((grid, block, shared))
        if config is None:
            config = self.configs[grid, block, shared] = LaunchConfig(
                grid=grid, block=block, shmem_size=shared)
        launch(_core_stream(stream), config, self.kernel, *self.args)


def _handle(cufunc) -> int | None:
    """The driver's handle of a loaded Numba kernel (a CUkernel, which cuLaunchKernel
    takes as it takes a CUfunction), or None if this numba-cuda does not show it."""
    try:
        return int(cufunc.handle)
    except (AttributeError, TypeError, ValueError):
        return None


def _c_values(args: list) -> list | None:
    """The kernel's arguments as C values, as cuda.core passes them: Numba 0.30 gives
    arrays' fields as Python ints (intptr_t), flags as bools, scalars as ctypes values.
    None if one is of another kind (cuda.core's launch then stays the way)."""
    values = []
    for arg in args:
        if isinstance(arg, ctypes._SimpleCData):
            values.append(arg)
        elif isinstance(arg, bool | np.bool_):
            values.append(ctypes.c_bool(bool(arg)))
        elif isinstance(arg, int | np.integer):
            values.append(ctypes.c_ssize_t(int(arg)))
        else:
            return None
    return values


@functools.cache
def _driver_functions() -> tuple:
    """(cuLaunchKernel, cuGetErrorName) from the driver through ctypes, found on first use;
    (None, None) where libcuda cannot be opened."""
    try:
        lib = ctypes.CDLL("libcuda.so.1")
    except OSError:
        return None, None
    launch, name = lib.cuLaunchKernel, lib.cuGetErrorName
    launch.argtypes = [ctypes.c_void_p, *[ctypes.c_uint] * 7, ctypes.c_void_p,
                       ctypes.c_void_p, ctypes.c_void_p]
    launch.restype = ctypes.c_int
    name.argtypes = [ctypes.c_int, ctypes.POINTER(ctypes.c_char_p)]
    name.restype = ctypes.c_int
    return launch, name


def _driver_launch():
    """The driver's cuLaunchKernel through ctypes, or None where libcuda cannot be opened."""
    return _driver_functions()[0]


def _driver_error(code: int) -> str:
    """The driver's name for error `code` (CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES, ...)."""
    text = ctypes.c_char_p()
    if _driver_functions()[1](code, ctypes.byref(text)) == 0 and text.value:
        return f"{text.value.decode()} ({code})"
    return f"CUDA error {code}"


_CORE_STREAMS: dict[int, object] = {}


def _core_stream(handle: int):
    """The cuda.core stream that launches on torch's stream `handle`."""
    stream = _CORE_STREAMS.get(handle)
    if stream is None:
        from numba.cuda.cudadrv import driver

        from wd_teach.backends.numba import numba_stream

        stream = _CORE_STREAMS[handle] = driver._to_core_stream(
            numba_stream(handle) if handle else 0)
    return stream
