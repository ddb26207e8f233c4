"""The PyCUDA backend: CUDA C compiled by nvcc, launched by PyCUDA on an NVIDIA GPU.

PyCUDA runs in torch's primary context (cuda_c.require_pycuda), so a kernel receives a
store's array as its data pointer: the same memory torch reads, no copy. A launch is
PyCUDA's prepared call: the argument types were packed once, when the kernel was loaded.
"""

from __future__ import annotations

import os

import torch

from wd_teach import cuda_c
from wd_teach.backends.base import CudaCBackend, LaunchCall
from wd_teach.errors import LaunchError

#: Streams that PyCUDA can launch on, by handle: PyCUDA cannot adopt a stream it did not make.
_STREAMS: dict[int, object] = {}


class PyCudaBackend(CudaCBackend):
    label = "PyCUDA"
    color = "tab:green"

    def usable(self, report) -> bool:
        return report.has_gpu and bool(report.pycuda)

    def why_not(self, report) -> str:
        if not report.has_gpu:
            return ("the pycuda backend runs CUDA C on an NVIDIA GPU, and this machine has "
                    "none. Use backend='numba' (it runs here on the CUDA simulator), or move "
                    "to a GPU machine or a Colab GPU runtime.")
        from wd_teach.device import PYCUDA_INSTALL

        return f"the pycuda backend needs PyCUDA, which is not installed: {PYCUDA_INSTALL}."

    def start(self) -> None:
        cuda_c.require_pycuda()

    def load(self, source, include_dirs=()) -> dict[str, tuple[object, list]]:
        if not isinstance(source, (str, os.PathLike)):
            raise LaunchError("the pycuda backend loads CUDA C (source text or a .cu path), "
                              f"not {type(source).__name__}. Numba kernels need "
                              "backend='numba'.")
        text = cuda_c.read_source(source)
        signatures = cuda_c.kernel_signatures(text)
        module = cuda_c.compile_module(text, cuda_c.include_dirs(source, include_dirs))
        loaded = {}
        for name, params in signatures.items():
            function = module.get_function(name)
            function.prepare("".join(p.struct_format for p in params))
            loaded[name] = (function, params)
        return loaded

    def launch_call(self, function, bound: tuple, device: torch.device) -> LaunchCall:
        def launch(grid: tuple, block: tuple, stream: int, shared: int = 0) -> None:
            if stream == 0:
                function.prepared_call(_dim3(grid), _dim3(block), *bound, shared_size=shared)
            else:
                function.prepared_async_call(_dim3(grid), _dim3(block), _stream(stream),
                                             *bound, shared_size=shared)

        return launch

    def stream(self) -> torch.cuda.Stream:
        """The stream is made by PyCUDA and lent to torch (torch.cuda.ExternalStream)."""
        stream = cuda_c.require_pycuda().Stream()
        _STREAMS[stream.handle] = stream
        return torch.cuda.ExternalStream(stream.handle)


def _stream(handle: int):
    stream = _STREAMS.get(handle)
    if stream is None:
        raise LaunchError("a PyCUDA kernel was launched while torch's current stream is one "
                          "PyCUDA did not make. Launch on the default stream, or on a stream "
                          "from wd_teach.launch.kernel_stream('pycuda').")
    return stream


def _dim3(dims: tuple[int, ...]) -> tuple[int, int, int]:
    return tuple(dims) + (1,) * (3 - len(dims))
