"""The ReLU's backward and its bias gradient in one pass (wd_teach.fast.triton_kernels): the
kernel's logic in Triton's interpreter on the CPU (where Triton is installed: the dev
extras), PyTorch's two kernels wherever the fused one does not apply.
tests/gpu/test_training_gpu.py runs the kernel on a GPU."""

import importlib.util
import subprocess
import sys
import textwrap

import pytest
import torch

from wd_teach.fast import triton_kernels as fused


def test_off_the_gpu_the_two_pytorch_kernels_run():
    torch.manual_seed(0)
    grad, out = torch.randn(50, 64), torch.relu(torch.randn(50, 64))
    g, db = fused.relu_backward(grad, out)
    assert not fused._fusable(grad, out)
    assert torch.equal(g, torch.where(out > 0, grad, torch.zeros(())))
    torch.testing.assert_close(db, g.sum(0))


def test_shapes_the_kernel_takes():
    assert fused.kernel_takes(torch.zeros(3, 256), torch.zeros(3, 256))
    assert fused.kernel_takes(torch.zeros(1, 1, dtype=torch.bfloat16),
                              torch.zeros(1, 1, dtype=torch.bfloat16))
    for shape in [(3, 100), (3, 2048), (0, 256), (3,), (2, 3, 4)]:  # not a power of two, ...
        t = torch.zeros(shape)
        assert not fused.kernel_takes(t, t), shape
    assert not fused.kernel_takes(torch.zeros(3, 8), torch.zeros(3, 16))
    assert not fused.kernel_takes(torch.zeros(3, 8), torch.zeros(3, 8, dtype=torch.float16))
    assert not fused.kernel_takes(torch.zeros(3, 8, dtype=torch.int32),
                                  torch.zeros(3, 8, dtype=torch.int32))


@pytest.mark.skipif(importlib.util.find_spec("triton") is None,
                    reason="Triton is not installed here (pip install -e '.[dev]'); "
                           "tests/gpu/test_training_gpu.py runs the kernel on a GPU")
def test_the_kernel_in_tritons_interpreter():
    """Rows that do not fill the last block, several widths and dtypes: the gradient equal
    to PyTorch's bit for bit, the bias gradient its row sum, in the gradient's dtype."""
    script = textwrap.dedent("""
        import os
        os.environ["TRITON_INTERPRET"] = "1"
        import torch
        from wd_teach.fast import triton_kernels as fused
        cases = [(1, 8, torch.float32), (200, 256, torch.float32), (130, 64, torch.bfloat16),
                 (64, 16, torch.float16)]
        for rows, cols, dtype in cases:
            torch.manual_seed(rows)
            grad = torch.randn(rows, cols).to(dtype)
            out = torch.relu(torch.randn(rows, cols)).to(dtype)
            g, db = fused._triton_relu_backward(grad, out)
            want = torch.where(out > 0, grad, torch.zeros((), dtype=dtype))
            assert torch.equal(g, want), (rows, cols, dtype)
            assert db.dtype == dtype and db.shape == (cols,)
            tol = 1e-5 if dtype == torch.float32 else 1e-2
            torch.testing.assert_close(db.float(), want.float().sum(0), rtol=tol, atol=tol)
            assert torch.equal(db, fused._triton_relu_backward(grad, out)[1])  # no atomics
        print("checked", len(cases))
    """)
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          timeout=600)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "checked 4" in done.stdout


@pytest.mark.skipif(importlib.util.find_spec("triton") is None,
                    reason="Triton is not installed here (pip install -e '.[dev]'); "
                           "tests/gpu/test_training_gpu.py runs the kernel on a GPU")
def test_the_masked_product_in_tritons_interpreter():
    """(a @ w) masked by h > 0 and its column sums: the inner size in one slice, in several
    (256 = 4 x 64), and not a multiple of 16 (heads of 13, a critic's 1); rows that do not
    fill the last block. The product rounds once from fp32 sums, as cuBLAS's does, so the
    values agree with PyTorch's product to the dtype's rounding and the zeros are exactly
    where h is not positive. In fp16 and fp32: the interpreter's product runs in NumPy,
    which has no bfloat16 (it returns garbage for bf16 operands), so bf16 is checked on the
    GPU (tests/gpu/test_training_gpu.py); the kernel is the same for every dtype."""
    script = textwrap.dedent("""
        import os
        os.environ["TRITON_INTERPRET"] = "1"
        import torch
        from wd_teach.fast import triton_kernels as fused
        cases = [(130, 16, 256, torch.float16), (200, 256, 256, torch.float16),
                 (70, 13, 128, torch.float32), (65, 1, 16, torch.float16),
                 (1, 8, 64, torch.float32)]
        for rows, k, cols, dtype in cases:
            torch.manual_seed(rows)
            a = torch.randn(rows, k).to(dtype)
            w = torch.randn(k, cols).to(dtype)
            h = torch.relu(torch.randn(rows, cols)).to(dtype)
            assert fused.product_takes(a, w, h) == (dtype == torch.float16 and k <= 64)
            g, db = fused._triton_masked_product(a, w, h)
            want = torch.where(h > 0, (a.float() @ w.float()).to(dtype),
                               torch.zeros((), dtype=dtype))
            assert g.dtype == dtype and g.shape == (rows, cols)
            assert (g[h <= 0] == 0).all()
            tol = 1e-5 if dtype == torch.float32 else 2e-3
            torch.testing.assert_close(g.float(), want.float(), rtol=tol, atol=tol)
            assert db.dtype == dtype and db.shape == (cols,)
            torch.testing.assert_close(db.float(), g.float().sum(0), rtol=1e-2, atol=1e-2)
            assert torch.equal(db, fused._triton_masked_product(a, w, h)[1])  # no atomics
        print("checked", len(cases))
    """)
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          timeout=600)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "checked 5" in done.stdout


def test_shapes_the_masked_product_takes():
    bf = torch.bfloat16
    assert fused.product_takes(torch.zeros(5, 16, dtype=bf), torch.zeros(16, 256, dtype=bf),
                               torch.zeros(5, 256, dtype=bf))
    # a hidden layer's gradient into the one below (k 256): cuBLAS's product is faster
    assert not fused.product_takes(torch.zeros(5, 256, dtype=bf), torch.zeros(256, 256, dtype=bf),
                                   torch.zeros(5, 256, dtype=bf))
    # fp32 (and tf32) keep cuBLAS's product
    assert not fused.product_takes(torch.zeros(5, 16), torch.zeros(16, 256),
                                   torch.zeros(5, 256))
    for a, w, h in [((5, 16), (16, 100), (5, 100)), ((5, 16), (16, 2048), (5, 2048)),
                    ((5, 16), (8, 256), (5, 256)), ((5, 16), (16, 256), (4, 256)),
                    ((0, 16), (16, 256), (0, 256)), ((5, 16), (16, 8), (5, 8))]:
        args = [torch.zeros(shape, dtype=bf) for shape in (a, w, h)]
        assert not fused.product_takes(*args), (a, w, h)


def test_off_the_gpu_the_masked_product_is_the_product_then_relu_backward():
    torch.manual_seed(1)
    a, w, h = torch.randn(20, 13), torch.randn(13, 64), torch.relu(torch.randn(20, 64))
    g, db = fused.masked_product(a, w, h)
    want = torch.ops.aten.threshold_backward(a @ w, h, 0)
    assert torch.equal(g, want)
    assert torch.equal(db, want.sum(0))


def test_a_kernel_that_cannot_be_built_falls_back_and_says_so(monkeypatch):
    """Where Triton fails (no C compiler, say), PyTorch's kernels take over with a warning,
    and the results are the same."""
    monkeypatch.setattr(fused, "FUSE_RELU_BACKWARD", True)
    monkeypatch.setattr(fused, "_fusable", lambda grad, out: fused.FUSE_RELU_BACKWARD)

    def broken(grad, out):
        raise RuntimeError("no C compiler found")

    monkeypatch.setattr(fused, "_triton_relu_backward", broken)
    grad, out = torch.randn(4, 8), torch.relu(torch.randn(4, 8))
    with pytest.warns(RuntimeWarning, match="fused ReLU backward .* no C compiler found"):
        g, db = fused.relu_backward(grad, out)
    assert torch.equal(g, torch.ops.aten.threshold_backward(grad, out, 0))
    assert not fused.FUSE_RELU_BACKWARD  # once: the next call goes straight to PyTorch


def test_the_old_module_warns_and_gives_the_same_kernels():
    """wd_teach.train.fused, the kernels' old home, still imports: with a warning that says
    where they are now, and the very same functions."""
    sys.modules.pop("wd_teach.train.fused", None)
    with pytest.warns(DeprecationWarning, match="wd_teach.fast.triton_kernels"):
        from wd_teach.train import fused as old
    assert old.masked_product is fused.masked_product
    assert old.relu_backward is fused.relu_backward
    assert old.require_triton is fused.require_triton
