"""On a GPU, lesson 10's kernels run under both backends and give NumPy's answers, the
measurements come out in sensible ranges, the checkers give a true verdict to the lesson's
solutions, and compute-sanitizer finds nothing in the lesson's kernels and the bug of each
broken one (memcheck the unguarded write, racecheck the lost count, synccheck the divergent
barrier). Only the sanitizer's tests skip, with the reason, where it is not found."""

from functools import partial

import numpy as np
import pytest
import torch
from numba import cuda, float32
from test_gpu_fundamentals import bounded_softmax

import wd_teach
from wd_teach import backends
from wd_teach.exercises import lesson_10
from wd_teach.fundamentals import kernels_numba, measure, reference, sanitizer

BACKENDS = ["pycuda", "numba"]
KERNELS_CU = measure.__file__.replace("measure.py", "kernels.cu")
needs_sanitizer = pytest.mark.skipif(sanitizer.find_compute_sanitizer() is None,
                                     reason="compute-sanitizer is not on this machine (CUDA "
                                            "toolkit, or pip's nvidia-cuda-sanitizer-api)")


@pytest.fixture(scope="module", params=BACKENDS)
def kernels(request):
    assert request.param in wd_teach.discover().backends, f"{request.param} is not usable here"
    return measure.Kernels(request.param)


@pytest.mark.parametrize("actions", measure.ROW_WIDTHS)
def test_the_row_sums_and_their_bandwidth(kernels, actions):
    limits = measure.card_limits()
    rows = measure.same_bytes_at_every_width(measure.ROW_WIDTHS, "cuda", limits) // actions
    probs = torch.rand(rows, actions, device="cuda")
    sums = torch.zeros(rows, device="cuda")
    ceiling = measure.copy_ceiling(probs.nbytes, "cuda")
    rates = {}
    for name, data in (("sum_rows", probs), ("sum_columns", probs.T.contiguous())):
        launch = partial(kernels.launch, name, measure.blocks_for(rows, 256), 256,
                         data.reshape(-1), sums, rows, actions)
        launch()
        assert torch.allclose(sums, probs.sum(dim=1), rtol=1e-4)
        rates[kernels.backend, actions, name] = measure.gb_per_s(
            probs.nbytes + sums.nbytes, measure.median_seconds(launch, "cuda"))
    # The rates are printed, not bounded: beside the rest of the GPU check on the same card
    # they vary by a factor of two or more (the lesson's table is where they are read).
    assert all(np.isfinite(rate) and rate > 0 for rate in rates.values())
    assert limits.peak_gb_per_s and limits.peak_gb_per_s > 0
    print({k[2]: round(v) for k, v in rates.items()}, "copy", round(ceiling), "peak",
          round(limits.peak_gb_per_s), measure.stride_cost(rates), sep="\n")


@pytest.mark.parametrize("name", ["transpose_naive", "transpose_tiled", "transpose_padded"])
def test_the_transposes(kernels, name):
    src = torch.rand(1000, 700, device="cuda")
    dst = torch.empty(src.numel(), device="cuda")
    kernels.launch(name, (measure.blocks_for(700, 32), measure.blocks_for(1000, 32)),
                   (32, 32), src.reshape(-1), dst, 1000, 700)
    assert torch.equal(dst.reshape(700, 1000), src.T)


@pytest.mark.parametrize("name, grid, block", [("push_cart_per_block", 100_000, 1),
                                               ("push_carts", 64, 256)])
def test_the_carts(kernels, name, grid, block):
    state = torch.rand(100_000, 4, device="cuda") - 0.5
    want = reference.push_carts(state.cpu().numpy(), 0.02)
    kernels.launch(name, grid, block, state.reshape(-1), 0.02, 100_000)
    assert np.allclose(state.cpu().numpy(), want, atol=1e-5)


def test_registers_and_occupancy_are_read_from_the_compiled_kernels(kernels):
    state = torch.zeros(4 * 64, device="cuda")
    kernels.launch("push_carts", 1, 64, state, 0.02, 64)
    regs = measure.registers(kernels, "push_carts")
    assert 0 < regs <= 255
    occ = measure.occupancy(regs, 256, 0, measure.card_limits())
    assert 0 < occ.fraction <= 1


REVERSE_CU = r"""
extern "C" __global__ void reverse_in_shared(float* values) {
  extern __shared__ float staged[];  // the launch's dynamic shared memory
  const int lane = threadIdx.x;
  staged[lane] = values[lane];
  __syncthreads();
  values[lane] = staged[blockDim.x - 1 - lane];
}
"""


@cuda.jit
def reverse_in_shared(values):
    staged = cuda.shared.array(0, float32)  # the launch's dynamic shared memory
    lane = cuda.threadIdx.x
    staged[lane] = values[lane]
    cuda.syncthreads()
    values[lane] = staged[cuda.blockDim.x - 1 - lane]


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_launch_gives_each_block_the_dynamic_shared_memory_it_asks_for(backend):
    cuda_c = backends.find(backend).reads_cuda_c
    kernels = measure.Kernels(backend, REVERSE_CU if cuda_c else reverse_in_shared)
    values = torch.arange(256, dtype=torch.float32, device="cuda")
    kernels.launch("reverse_in_shared", 1, 256, values, shared=256 * 4)
    torch.cuda.synchronize()
    assert values.tolist() == list(range(255, -1, -1))


def test_the_cards_limits_are_read_and_an_h100s_are_the_saved_ones():
    limits = measure.card_limits()
    assert limits.blocks_per_sm > 0 and limits.shared_per_block > 0
    if "H100" in limits.name:
        for field in ("threads_per_sm", "blocks_per_sm", "registers_per_sm", "shared_per_sm",
                      "reserved_shared_per_block", "shared_per_block"):
            assert getattr(limits, field) == getattr(measure.H100, field), field


def test_each_occupancy_level_is_what_the_driver_counts_and_its_sums_are_right(kernels):
    """Step 6's launches: at every level the blocks an SM holds by measure.occupancy are the
    driver's own count for Numba's compiled kernel (cuOccupancyMaxActiveBlocksPerMultiprocessor,
    through max_cooperative_grid_blocks), and the sums are right. GB/s printed, not bounded."""
    limits, threads, rows = measure.card_limits(), measure.OCCUPANCY_BLOCK, 1 << 22
    probs_t = torch.rand(10, rows, device="cuda")
    sums = torch.zeros(rows, device="cuda")
    run = kernels.bind("sum_columns", probs_t.reshape(-1), sums, rows, 10)
    grid = measure.blocks_for(rows, threads)
    run(grid, threads)
    levels = measure.occupancy_levels(measure.registers(kernels, "sum_columns"), limits, threads)
    if "H100" in limits.name:
        assert [occ.fraction for _, occ in levels] == [1.0, 0.5, 0.25, 0.125]
    rates = {}
    for shared, occ in levels:
        sums.zero_()
        run(grid, threads, shared)
        assert torch.allclose(sums, probs_t.sum(dim=0), rtol=1e-4), shared
        if not kernels.backend.reads_cuda_c:
            compiled = next(iter(kernels.kernel("sum_columns").overloads.values()))
            driver = compiled.max_cooperative_grid_blocks(threads, shared) // limits.sms
            assert driver == occ.blocks_per_sm, (shared, driver, occ)
        rates[kernels.backend, 10, occ.fraction] = measure.gb_per_s(
            probs_t.nbytes + sums.nbytes,
            measure.median_seconds(partial(run, grid, threads, shared), "cuda"))
    print(measure.occupancy_cost(rates))


def test_the_solutions_verdicts_are_true_with_both_halves_run():
    text = open(KERNELS_CU).read()
    header = "#define TILE 32\n#define GRAVITY 9.8f\n#define POLE_HALF_LENGTH 0.5f\n"
    from wd_teach.lessons.show import cuda_function

    for check, kernel, extra in ((lesson_10.check_sum_columns, kernels_numba.sum_columns, ""),
                                 (lesson_10.check_padded_transpose,
                                  kernels_numba.transpose_padded, ""),
                                 (lesson_10.check_grid_stride, kernels_numba.push_carts,
                                  cuda_function(text, "fall"))):
        name = kernel.py_func.__name__
        source = header + extra + "\n" + cuda_function(text, name)
        assert check(kernel, source, "pycuda"), name


@needs_sanitizer
@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("tool", sanitizer.TOOLS)
def test_the_lessons_kernels_are_clean_under_every_tool(tool, backend):
    """Every lesson kernel in one program under the tool: one start of Python and torch
    under it, not one a kernel (48 starts were most of this file's 500 s of tests)."""
    clean = sorted(set(sanitizer.RUNS) - set(sanitizer.BROKEN))
    report = sanitizer.sanitize(clean, tool, backend)
    assert report.errors == 0, "\n".join(report.findings[:20]) or report.output[-2000:]
    for kernel in clean:
        assert f"launched {kernel}\n" in report.output, (kernel, report.output[-2000:])


@needs_sanitizer
@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("kernel", sanitizer.BROKEN)
def test_each_broken_kernel_is_found_by_its_tool(kernel, backend):
    report = sanitizer.sanitize(kernel, sanitizer.FINDS[kernel], backend)
    assert report.errors and report.errors > 0, report.output[-3000:]


def test_the_bounded_softmax_is_true_with_both_halves_run_and_unbounded_refused(capsys):
    """Exercise 4 on a GPU: the bounds read from each language's PTX, the registers from
    each compiled kernel; unbounded, both halves are refused."""
    bounded = cuda.jit(launch_bounds=(256, 8))(kernels_numba.softmax_rows.py_func)
    verdict = lesson_10.check_launch_bounds(bounded, bounded_softmax(), "pycuda")
    assert verdict, capsys.readouterr().out
    assert capsys.readouterr().out.count("8 blocks of 256 fit an SM") == 2
    free = cuda.jit(kernels_numba.softmax_rows.py_func)
    verdict = lesson_10.check_launch_bounds(free, bounded_softmax(""), "pycuda")
    assert set(verdict.wrong) == {"Numba kernel", "CUDA C kernel"}
    assert capsys.readouterr().out.count("(threads None, blocks an SM None)") == 2
