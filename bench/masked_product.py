"""The ReLU mask inside the gradient's product (wd_teach.fast.triton_kernels.masked_product):
PyTorch's way (cuBLAS's product, then the one-pass ReLU backward) beside Triton's one
kernel under each way of splitting its work.

    python bench/masked_product.py out.json
    python bench/masked_product.py out.json --rows 1600000,160000 --inner 16,256

The shapes are PPO's on Tag at 500 envs: a minibatch of 1.6 M runner rows (160,000
tagger rows), a hidden width of 256; an inner size of 16 is the stacked output layer's
gradient flowing into the top hidden layer, 256 a hidden layer's into the one below.
Each row gives the GPU time of one call (CUDA events, the median of `--repeat`), the
memory it must move (read a and h, write g; the weight stays in cache) over that time,
and whether its result agrees with PyTorch's to bf16's rounding. A table to read, never
a pass or fail: fused.PRODUCT_BLOCKS is set from it.
"""

from __future__ import annotations

import argparse
import itertools
import json
import statistics
from pathlib import Path

import torch

from wd_teach.fast import triton_kernels as fused
from wd_teach.fast.triton_kernels import ProductBlocks


def gpu_ms(fn, repeat: int) -> float:
    """The median GPU time of fn(), in ms, after two warm-up calls."""
    for _ in range(2):
        fn()
    times = []
    for _ in range(repeat):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end))
    return statistics.median(times)


def sweep() -> list[ProductBlocks]:
    """The ways of splitting tried: rows and cols per program, warps, loads in flight."""
    return [ProductBlocks(rows=r, cols=c, k=64, warps=w, stages=s)
            for r, c, w, s in itertools.product((32, 64, 128), (64, 128, 256), (4, 8), (1, 3))
            if r * c <= 128 * 128 or w == 8]


def measure(rows: int, k: int, cols: int, repeat: int) -> dict:
    """PyTorch's way and every split of Triton's kernel for one shape; prints the best."""
    torch.manual_seed(0)
    a = torch.randn(rows, k, device="cuda").bfloat16()
    w = (torch.randn(k, cols, device="cuda") / k ** 0.5).bfloat16()
    h = torch.relu(torch.randn(rows, cols, device="cuda")).bfloat16()
    moved = (a.numel() + 2 * h.numel()) * 2  # bytes: read a and h, write g
    want = torch.ops.aten.threshold_backward(a @ w, h, 0)
    times = [("pytorch: cuBLAS product, then relu_backward",
              gpu_ms(lambda: fused.relu_backward(a @ w, h), repeat), True)]
    for blocks in sweep():
        try:
            g, _ = fused._triton_masked_product(a, w, h, blocks)
        except Exception as err:  # a split this GPU cannot run (too many registers...)
            print(f"  {blocks}: {type(err).__name__}")
            continue
        agrees = bool(((g.float() - want.float()).abs()
                       <= 2 ** -7 * want.float().abs() + 1e-6).all())
        ms = gpu_ms(lambda b=blocks: fused._triton_masked_product(a, w, h, b), repeat)
        times.append((str(blocks), ms, agrees))
    print(f"\n== rows {rows:,}, inner {k}, cols {cols}: {moved / 1e9:.2f} GB to move")
    for label, ms, agrees in [times[0], *sorted(times[1:], key=lambda r: r[1])[:8]]:
        print(f"  {ms:7.3f} ms  {moved / ms / 1e6:7.0f} GB/s  {'ok ' if agrees else 'BAD'} "
              f"{label}")
    return {"rows": rows, "inner": k, "cols": cols, "bytes": moved,
            "times": [{"label": lb, "ms": ms, "agrees": ok} for lb, ms, ok in times]}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("--rows", default="1600000,160000")
    parser.add_argument("--inner", default="16,256")
    parser.add_argument("--cols", type=int, default=256)
    parser.add_argument("--repeat", type=int, default=20)
    args = parser.parse_args(argv)
    results = [measure(rows, k, args.cols, args.repeat)
               for rows, k in itertools.product(map(int, args.rows.split(",")),
                                                map(int, args.inner.split(",")))]
    args.out.write_text(json.dumps({"device": torch.cuda.get_device_name(0),
                                    "torch": torch.__version__, "results": results},
                                   indent=1) + "\n")


if __name__ == "__main__":
    main()
