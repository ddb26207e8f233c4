"""CUDA C on the CPU: a kernel compiled by the host's C++ compiler and run one thread at a time.

Where no GPU runs CUDA C, a checker can still run the learner's CUDA C kernel and compare
what it computed, instead of only compiling it. A short header stands in for what CUDA gives
a kernel (threadIdx, blockIdx, blockDim, gridDim, the atomics and a few intrinsics), and each
launch walks the grid's blocks and each block's threads in turn, as Numba's simulator does
for Python kernels, but without its threads.

What it can show: whether each thread computes the right thing, whether a thread past the
last agent writes where it must not (the fenced stores of wd_teach/exercises/fence.py catch
that on the CPU too). What it cannot: a race (one thread at a time never collides, so a
plain `+=` looks right) and a barrier (`__syncthreads()` needs every thread of the block to
wait for the others; a launch that reaches one stops with a LaunchError that says so). So a
checker counts a run here as run on the CPU, never as run on a GPU.

It is a backend of the same kind as PyCUDA (wd_teach/backends/base.py, CudaCBackend), but not
one that an env or a trainer chooses from (wd_teach/backends ALL): only the exercises'
checkers use it, through `HOST_C` here, and only where the store lives on the CPU.
"""

from __future__ import annotations

import ctypes
import hashlib
import os
import subprocess
import tempfile
from pathlib import Path

import torch

from wd_teach import cuda_c
from wd_teach.backends.base import CudaCBackend, LaunchCall
from wd_teach.device import cxx_path as compiler
from wd_teach.errors import LaunchError

#: What a kernel finds in CUDA and not in C++: the thread's place in the grid, the atomics
#: (plain operations: one thread runs at a time) and the intrinsics the lessons use.
CUDA_ON_THE_HOST = r"""
#include <math.h>
#include <stdint.h>
#include <string.h>
struct wd_host_dim3 { unsigned int x, y, z; };
static wd_host_dim3 threadIdx, blockIdx, blockDim, gridDim;
static int wd_host_barrier = 0;
static const int warpSize = 32;
#define __global__
#define __device__
#define __host__
#define __forceinline__ inline
#define __noinline__
#define __launch_bounds__(...)
#define __shared__ static
static inline void __syncthreads() { wd_host_barrier = 1; }
static inline void __syncwarp(unsigned int = 0xffffffffu) { wd_host_barrier = 1; }
static inline void __threadfence() {}
static inline void __threadfence_block() {}
#define WD_HOST_ATOMIC(name, change)                       \
  template <typename T> static inline T name(T* p, T v) {  \
    T old = *p;                                            \
    change;                                                \
    return old;                                            \
  }
WD_HOST_ATOMIC(atomicAdd, *p = old + v)
WD_HOST_ATOMIC(atomicSub, *p = old - v)
WD_HOST_ATOMIC(atomicExch, *p = v)
WD_HOST_ATOMIC(atomicMin, if (v < old) *p = v)
WD_HOST_ATOMIC(atomicMax, if (v > old) *p = v)
template <typename T> static inline T atomicCAS(T* p, T cmp, T v) {
  T old = *p;
  if (old == cmp) *p = v;
  return old;
}
template <typename T> static inline T __ldg(const T* p) { return *p; }
template <typename T> static inline T min(T a, T b) { return b < a ? b : a; }
template <typename T> static inline T max(T a, T b) { return a < b ? b : a; }
static inline unsigned int __umulhi(unsigned int a, unsigned int b) {
  return (unsigned int)(((unsigned long long)a * b) >> 32);
}
static inline float __int_as_float(int i) { float f; memcpy(&f, &i, 4); return f; }
static inline int __float_as_int(float f) { int i; memcpy(&i, &f, 4); return i; }
static inline float __uint_as_float(unsigned int i) { float f; memcpy(&f, &i, 4); return f; }
static inline unsigned int __float_as_uint(float f) { unsigned int i; memcpy(&i, &f, 4); return i; }
static inline float __fdividef(float a, float b) { return a / b; }
"""


def _launcher(name: str, params) -> str:
    """A C function that runs kernel `name` for every thread of the grid, one at a time,
    with its arguments from an array of pointers: a pointer parameter's value, a scalar's
    address. It returns 1 when a thread reached a barrier."""
    args = ", ".join(f"({p.ctype}*)a[{i}]" if p.pointer else f"*({p.ctype}*)a[{i}]"
                     for i, p in enumerate(params))
    return f"""
extern "C" int wd_host_launch_{name}(const unsigned int* g, const unsigned int* b, void** a) {{
  gridDim = {{g[0], g[1], g[2]}};
  blockDim = {{b[0], b[1], b[2]}};
  wd_host_barrier = 0;
  for (unsigned int bz = 0; bz < g[2]; ++bz)
    for (unsigned int by = 0; by < g[1]; ++by)
      for (unsigned int bx = 0; bx < g[0]; ++bx) {{
        blockIdx = {{bx, by, bz}};
        for (unsigned int tz = 0; tz < b[2]; ++tz)
          for (unsigned int ty = 0; ty < b[1]; ++ty)
            for (unsigned int tx = 0; tx < b[0]; ++tx) {{
              threadIdx = {{tx, ty, tz}};
              {name}({args});
              if (wd_host_barrier) return 1;
            }}
      }}
  return 0;
}}
"""


_BUILT: dict[str, ctypes.CDLL] = {}


class HostCBackend(CudaCBackend):
    label = "CUDA C on the CPU"
    color = "tab:olive"

    def device(self) -> torch.device:
        return torch.device("cpu")

    def usable(self, report) -> bool:
        return compiler() is not None

    def why_not(self, report) -> str:
        return ("running CUDA C on the CPU needs a C++ compiler (g++ or clang++), and none is "
                "on PATH: install one (apt-get install g++).")

    def start(self) -> None:
        if compiler() is None:
            raise LaunchError(self.why_not(None))

    def twin_kernels(self, env, twin):
        """None: the checkers run an env's plain kernels, the ones the learner wrote or read,
        never a fast twin."""
        return None

    def load(self, source, include_dirs=()) -> dict[str, tuple[object, list]]:
        text = cuda_c.read_source(source)
        signatures = cuda_c.kernel_signatures(text)
        program = CUDA_ON_THE_HOST + text + "".join(
            _launcher(name, params) for name, params in signatures.items())
        dirs = cuda_c.include_dirs(source, include_dirs)
        library = _build(program, dirs)
        loaded = {}
        for name, params in signatures.items():
            function = getattr(library, f"wd_host_launch_{name}")
            function.restype = ctypes.c_int  # 1: it reached a barrier
            # the grid's and the block's dims, and argv: set once here, not at every launch
            function.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p]
            loaded[name] = ((name, function), params)
        return loaded

    def launch_call(self, kernel, bound: tuple, device: torch.device) -> LaunchCall:
        if device.type != "cpu":
            raise LaunchError(f"CUDA C runs on the CPU only over a store on the CPU; this one "
                              f"is on {device}.")
        name, function = kernel
        # a pointer parameter's value is the address itself; a scalar's is where it is kept
        kept = [ctypes.c_void_p(int(v)) if isinstance(v, int) else
                ctypes.c_float(v) if v.dtype.kind == "f" else
                ctypes.c_uint32(v) if v.dtype.kind == "u" else ctypes.c_int32(v)
                for v in bound]
        argv = (ctypes.c_void_p * max(len(kept), 1))(*[
            k.value if isinstance(k, ctypes.c_void_p) else ctypes.cast(ctypes.pointer(k),
                                                                       ctypes.c_void_p).value
            for k in kept])

        def launch(grid: tuple, block: tuple, stream: int = 0, shared: int = 0) -> None:
            dims = [(ctypes.c_uint * 3)(*(tuple(d) + (1,) * (3 - len(d)))) for d in (grid, block)]
            if function(dims[0], dims[1], argv):
                raise LaunchError(f"kernel {name!r} waits at a barrier (__syncthreads), and on "
                                  "the CPU its threads run one after another, so none can wait "
                                  "for the others: it runs only on a GPU.")

        launch.arguments = kept  # the scalars argv points at live as long as the launch
        return launch


def _build(program: str, include_dirs) -> ctypes.CDLL:
    """Compile `program` into a shared library, once per text, and load it."""
    key = hashlib.sha256((program + "\0".join(include_dirs)).encode()).hexdigest()[:16]
    if key in _BUILT:
        return _BUILT[key]
    folder = Path(tempfile.gettempdir()) / "wd_teach_host_c"
    folder.mkdir(exist_ok=True)
    source, library = folder / f"{key}.cpp", folder / f"{key}.so"
    if not library.exists():
        source.write_text(program)
        building = folder / f"{key}.{os.getpid()}.so"  # another process may build it too
        command = [compiler(), "-std=c++17", "-O1", "-shared", "-fPIC", "-w",
                   *(f"-I{d}" for d in include_dirs), str(source), "-o", str(building)]
        done = subprocess.run(command, capture_output=True, text=True)
        if done.returncode == 0:
            os.replace(building, library)
        else:
            raise LaunchError(f"the host's C++ compiler could not build the kernel to run on "
                              f"the CPU:\n{done.stderr.strip()[-2000:]}")
    _BUILT[key] = ctypes.CDLL(str(library))
    return _BUILT[key]


#: The one host backend, for the checkers.
HOST_C = HostCBackend("cpu")
