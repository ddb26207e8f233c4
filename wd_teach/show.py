"""What a notebook shows instead, where a PyCUDA cell cannot run.

A lesson keeps its PyCUDA cells on every machine. Without a GPU (or without PyCUDA) such a
cell calls `pycuda_missing(source)`: it says plainly why the cell cannot run, shows the CUDA C
it would have compiled, and, when nvcc is here, the start of the PTX that nvcc makes of it,
so the learner still sees what the GPU would be given.
"""

from __future__ import annotations

from wd_teach import cuda_c
from wd_teach.device import PYCUDA_INSTALL, discover, nvcc_path
from wd_teach.errors import CompileError


def pycuda_here() -> bool:
    """True when PyCUDA kernels can run on this machine (a GPU, and PyCUDA installed)."""
    return "pycuda" in discover().backends


def ptx_head(source: str, lines: int = 30) -> str:
    """The first `lines` lines of the PTX that nvcc makes of `source` (needs nvcc, no GPU)."""
    return "\n".join(cuda_c.ptx(source).splitlines()[:lines])


def pycuda_missing(source: str | None = None, ptx_lines: int = 30) -> None:
    """Say why PyCUDA cannot run here; show `source` and the start of its PTX instead."""
    if not discover().has_gpu:
        print("PyCUDA runs CUDA C on an NVIDIA GPU, and this machine has none, so this cell "
              "does not run it here.")
    else:
        print(f"PyCUDA is not installed, so this cell does not run. {PYCUDA_INSTALL}.")
    if source is None:
        return
    print("\nThe CUDA C it would compile:\n")
    print(source.strip("\n"))
    if nvcc_path() is None:
        print("\n(nvcc is not on this machine either, so there is no PTX to show.)")
        return
    try:
        head = ptx_head(source, ptx_lines)
    except CompileError as err:
        print(f"\n{err}")
        return
    print(f"\nThe first {ptx_lines} lines of the PTX that nvcc makes of it (no GPU needed):\n")
    print(head)
