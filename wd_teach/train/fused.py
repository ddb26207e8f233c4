"""The ReLU's backward pass and its layer's bias gradient in one pass over memory.

Backward through relu(x @ W.T + b) needs, from the gradient `grad` of the layer's output and
the output `out` itself:

    g      = grad where out > 0, else 0     the gradient before the ReLU  [rows, cols]
    db     = g summed over the rows         the bias gradient             [cols]

In PyTorch these are two kernels, and both are pure memory traffic: the first reads `grad`
and `out` and writes `g`, the second reads `g` all over again. At Tag's 10,000 envs a layer's
`g` is a million rows of 256 values, so the second read is half a gigabyte, some 60 ms of an
iteration over all layers. `relu_backward` does both in one kernel (Triton): each program
takes a block of rows, writes its part of `g` and sums its rows' columns as it goes, into a
row of partial sums; one small sum over those rows gives `db`. The blocks are fixed by the
shape, never by timing, so the sums are the same on every run (no atomics): a replayed CUDA
graph and the step-by-step run agree bit for bit.

Where Triton is not there (a CPU, or an install without it), or the width is not a power of
two, the same two results come from the two PyTorch kernels.
"""

from __future__ import annotations

import functools
import warnings

import torch

#: Rows each Triton program takes: enough work per program to hide memory latency, few
#: enough programs that their partial sums (programs x cols, fp32) stay small.
BLOCK_ROWS = 64
#: Widths the kernel takes: powers of two (Triton's block shapes), up to this many columns.
MAX_COLS = 1024
#: A switch for benchmarks that measure the difference; the results are the same.
FUSE_RELU_BACKWARD = True


def relu_backward(grad: torch.Tensor, out: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """(g, db): the gradient before a ReLU whose output was `out`, and its sum over rows,
    for `grad` and `out` of one shape [rows, cols]. `db` is in `grad`'s dtype, as
    `g.sum(0)` gives it."""
    if _fusable(grad, out):
        try:
            return _triton_relu_backward(grad.contiguous(), out.contiguous())
        except Exception as err:  # Triton could not build its kernel here (no C compiler...)
            _give_up(err)
    g = torch.ops.aten.threshold_backward(grad, out, 0)
    return g, g.sum(0)


def _give_up(err: Exception) -> None:
    """Use PyTorch's two kernels from now on, and say once why."""
    global FUSE_RELU_BACKWARD
    FUSE_RELU_BACKWARD = False
    warnings.warn(f"the fused ReLU backward (Triton) failed, so PyTorch's kernels run instead "
                  f"(the same results, one more pass over memory): {type(err).__name__}: "
                  f"{err}", RuntimeWarning, stacklevel=3)


def _fusable(grad: torch.Tensor, out: torch.Tensor) -> bool:
    return (FUSE_RELU_BACKWARD and grad.is_cuda and kernel_takes(grad, out)
            and _kernel() is not None)


def kernel_takes(grad: torch.Tensor, out: torch.Tensor) -> bool:
    """Whether the kernel takes these shapes and dtypes: both [rows, cols] alike, rows > 0,
    cols a power of two up to MAX_COLS, a float dtype."""
    if grad.dim() != 2 or grad.shape != out.shape or grad.dtype != out.dtype:
        return False
    rows, cols = grad.shape
    return (grad.dtype in (torch.float32, torch.bfloat16, torch.float16) and rows > 0
            and 0 < cols <= MAX_COLS and cols & (cols - 1) == 0)


def _triton_relu_backward(grad: torch.Tensor, out: torch.Tensor):
    rows, cols = grad.shape
    programs = -(-rows // BLOCK_ROWS)
    g = torch.empty_like(grad)
    partial = torch.empty((programs, cols), dtype=torch.float32, device=grad.device)
    _kernel()[(programs,)](grad, out, g, partial, rows, COLS=cols, BLOCK_ROWS=BLOCK_ROWS,
                           num_warps=8 if cols >= 256 else 4)
    return g, partial.sum(0).to(grad.dtype)


@functools.cache
def _kernel():
    """The Triton kernel, made on first use; None where Triton cannot be imported."""
    try:
        import triton
        import triton.language as tl
    except ImportError:
        return None

    @triton.jit
    def relu_backward_kernel(grad_ptr, out_ptr, g_ptr, partial_ptr, rows,
                             COLS: tl.constexpr, BLOCK_ROWS: tl.constexpr):
        block = tl.program_id(0)
        row = block * BLOCK_ROWS + tl.arange(0, BLOCK_ROWS)[:, None]
        col = tl.arange(0, COLS)[None, :]
        inside = row < rows
        at = row.to(tl.int64) * COLS + col
        grad = tl.load(grad_ptr + at, mask=inside, other=0.0)
        out = tl.load(out_ptr + at, mask=inside, other=0.0)
        g = tl.where(out > 0, grad, tl.zeros_like(grad))
        tl.store(g_ptr + at, g, mask=inside)
        tl.store(partial_ptr + block * COLS + tl.arange(0, COLS),
                 tl.sum(g.to(tl.float32), axis=0))

    return relu_backward_kernel
