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

One step back, the gradient itself comes from a product: the next layer's input gradient
`a @ w` (a [rows, k] the gradient of its output, w [k, cols] its weight), written out in
full only for `relu_backward` to read it again. `masked_product` does the product, the
mask and the bias gradient in one kernel: the product's result stays in registers, is
masked there and written once. That pass over [rows, cols] is what the cuBLASLt DRELU
epilogue saves, which PyTorch does not expose. It pays where k is small (an output
layer's few gradients: the product is nearly free, the passes are all there is) and not
where k is a hidden width, where cuBLAS's product is faster than Triton's by more than
the pass saved (PRODUCT_BLOCKS). It runs for 16-bit inputs (bf16 training), where
Triton's product rounds as cuBLAS's does (fp32 sums, one rounding); fp32 and tf32 keep
cuBLAS's product, so their runs stay bit for bit what they were.

Where Triton is not there (a CPU, or an install without it), or the width is not a power of
two, the same results come from PyTorch's kernels.
"""

from __future__ import annotations

import functools
import importlib.util
import warnings
from dataclasses import dataclass

import torch

from wd_teach.errors import MissingPieceError

#: Rows each Triton program takes: enough work per program to hide memory latency, few
#: enough programs that their partial sums (programs x cols, fp32) stay small.
BLOCK_ROWS = 64
#: Widths the kernel takes: powers of two (Triton's block shapes), up to this many columns.
MAX_COLS = 1024
#: Widths masked_product's kernel takes: powers of two in this range.
PRODUCT_COLS = (16, 1024)
#: A switch for benchmarks that measure the difference; the results are the same (the
#: product's to its rounding).
FUSE_RELU_BACKWARD = True


def relu_backward(grad: torch.Tensor, out: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """(g, db): the gradient before a ReLU whose output was `out`, and its sum over rows,
    for `grad` and `out` of one shape [rows, cols]. `db` is in `grad`'s dtype, as
    `g.sum(0)` gives it.

    Replaces the plain floor's backward through nn.ReLU and its layer's bias gradient
    (threshold_backward, then a second read for the sum). Gained (bench/NOTES.md, round
    four, change 15; Tag, shared ReLU bodies, bf16): 66.5 -> 63.9 ms an iteration at 500
    envs (+4%), 1,034.8 -> 985.5 ms at 10,000 (+5%)."""
    if _fusable(grad, out):
        try:
            return _triton_relu_backward(grad.contiguous(), out.contiguous())
        except Exception as err:  # Triton could not build its kernel here (no C compiler...)
            _give_up(err)
    g = torch.ops.aten.threshold_backward(grad, out, 0)
    return g, g.sum(0)


def masked_product(a: torch.Tensor, w: torch.Tensor,
                   h: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """(g, db): g = a @ w where h > 0, else 0, and g summed over rows; a [rows, k] the
    gradient of a layer's output, w [k, cols] its weight, h [rows, cols] the ReLU output
    that was the layer's input. On a GPU in 16-bit with a small k (PRODUCT_BLOCKS), one
    Triton kernel; else the product, then relu_backward.

    Replaces the plain floor's `a @ w` then the ReLU's backward. Gained (bench/NOTES.md,
    round seven): 0.70 ms against 1.27 for 1.6 M rows of 256 from an output layer's 16
    gradients, in bf16 on an H100."""
    if _product_fusable(a, w, h):
        try:
            return _triton_masked_product(a.contiguous(), w.contiguous(), h.contiguous())
        except Exception as err:  # Triton could not build its kernel here
            _give_up(err)
    return relu_backward(a @ w, h)


def product_takes(a: torch.Tensor, w: torch.Tensor, h: torch.Tensor) -> bool:
    """Whether masked_product's kernel takes these: all 2-D, one 16-bit dtype, a [rows, k],
    w [k, cols], h [rows, cols], rows > 0, k within PRODUCT_BLOCKS' reach, cols a power of
    two in PRODUCT_COLS' range."""
    if a.dim() != 2 or w.dim() != 2 or h.dim() != 2 or not a.dtype == w.dtype == h.dtype:
        return False
    rows, k = a.shape
    cols = h.shape[1]
    low, high = PRODUCT_COLS
    return (a.dtype in (torch.bfloat16, torch.float16) and rows > 0
            and 0 < k and product_blocks(k) is not None and w.shape == (k, cols)
            and h.shape[0] == rows and low <= cols <= high and cols & (cols - 1) == 0)


def _product_fusable(a, w, h) -> bool:
    return (FUSE_RELU_BACKWARD and a.is_cuda and product_takes(a, w, h)
            and _product_kernel() is not None)


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


def require_triton(what: str) -> None:
    """Raise MissingPieceError, saying what to do, where Triton cannot be imported: `what`
    (trainer.compile, say) needs it to make its kernels."""
    if importlib.util.find_spec("triton") is None:
        raise MissingPieceError(f"{what} needs Triton to build its GPU kernels, and it is not "
                                "installed here. Install it (pip install triton; it comes with "
                                f"torch's CUDA wheels on Linux), or set {what}=false.")


def _triton_relu_backward(grad: torch.Tensor, out: torch.Tensor):
    rows, cols = grad.shape
    programs = -(-rows // BLOCK_ROWS)
    g = torch.empty_like(grad)
    partial = torch.empty((programs, cols), dtype=torch.float32, device=grad.device)
    _kernel()[(programs,)](grad, out, g, partial, rows, COLS=cols, BLOCK_ROWS=BLOCK_ROWS,
                           num_warps=8 if cols >= 256 else 4)
    return g, partial.sum(0).to(grad.dtype)


@dataclass(frozen=True)
class ProductBlocks:
    """How masked_product's kernel splits its work: each program takes `rows` x `cols` of
    the result (its fp32 sums in registers), the inner size `k` at a time, with `warps`
    warps and `stages` loads in flight. bench/masked_product.py times the choices."""

    rows: int = 64
    cols: int = 128
    k: int = 64
    warps: int = 4
    stages: int = 3


#: The blocks masked_product's kernel uses, by the largest inner size k they serve; a k
#: above every key takes PyTorch's product. Chosen with bench/masked_product.py on an
#: H100, 1.6 M rows of 256 in bf16: where an output layer's 16 gradients flow into the
#: top hidden layer, the kernel takes 0.70 ms against PyTorch's 1.27 (cuBLAS's product
#: then relu_backward); from one hidden layer into another (k 256) the best split took
#: 1.61 ms against PyTorch's 1.46, cuBLAS's product being the better one there.
PRODUCT_BLOCKS = {64: ProductBlocks()}


def product_blocks(k: int) -> ProductBlocks | None:
    """The blocks for inner size `k`, or None where the kernel does not take it."""
    fits = [limit for limit in PRODUCT_BLOCKS if k <= limit]
    return PRODUCT_BLOCKS[min(fits)] if fits else None


def _triton_masked_product(a: torch.Tensor, w: torch.Tensor, h: torch.Tensor,
                           blocks: ProductBlocks | None = None):
    rows, k = a.shape
    blocks = blocks or product_blocks(k) or ProductBlocks()
    cols = h.shape[1]
    block_cols = min(blocks.cols, cols)
    block_k = max(16, min(blocks.k, _power_of_two(k)))  # a product's inner size: >= 16
    programs = -(-rows // blocks.rows)
    g = torch.empty_like(h)
    partial = torch.empty((programs, cols), dtype=torch.float32, device=h.device)
    grid = (programs, cols // block_cols)
    _product_kernel()[grid](a, w, h, g, partial, rows, K=k, COLS=cols,
                            BLOCK_ROWS=blocks.rows, BLOCK_COLS=block_cols, BLOCK_K=block_k,
                            num_warps=blocks.warps, num_stages=blocks.stages)
    return g, partial.sum(0).to(h.dtype)


def _power_of_two(n: int) -> int:
    """The least power of two >= n."""
    return 1 << max(0, n - 1).bit_length()


@functools.cache
def _product_kernel():
    """masked_product's Triton kernel, made on first use; None where Triton cannot be
    imported."""
    try:
        import triton
        import triton.language as tl
    except ImportError:
        return None

    @triton.jit
    def masked_product_kernel(a_ptr, w_ptr, h_ptr, g_ptr, partial_ptr, rows,
                              K: tl.constexpr, COLS: tl.constexpr, BLOCK_ROWS: tl.constexpr,
                              BLOCK_COLS: tl.constexpr, BLOCK_K: tl.constexpr):
        block = tl.program_id(0)
        cols = tl.program_id(1) * BLOCK_COLS + tl.arange(0, BLOCK_COLS)
        row = block * BLOCK_ROWS + tl.arange(0, BLOCK_ROWS)[:, None]
        col = cols[None, :]
        inside = row < rows
        at = row.to(tl.int64) * COLS + col
        h = tl.load(h_ptr + at, mask=inside, other=0.0)  # asked for first: it comes meanwhile
        product = tl.zeros((BLOCK_ROWS, BLOCK_COLS), dtype=tl.float32)
        for start in tl.static_range(0, K, BLOCK_K):  # the inner size in slices, unrolled
            k = start + tl.arange(0, BLOCK_K)
            a = tl.load(a_ptr + row.to(tl.int64) * K + k[None, :],
                        mask=inside & (k[None, :] < K), other=0.0)
            w = tl.load(w_ptr + k[:, None] * COLS + col, mask=k[:, None] < K, other=0.0)
            product += tl.dot(a, w)
        g = tl.where(h > 0, product, 0.0).to(g_ptr.dtype.element_ty)
        tl.store(g_ptr + at, g, mask=inside)
        tl.store(partial_ptr + block * COLS + cols, tl.sum(g.to(tl.float32), axis=0))

    return masked_product_kernel


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
