"""Lesson 10's kernels and checkers on the CPU (Numba's simulator; CUDA C through nvcc where
it is here): the kernels give the NumPy reference's answers, the measurements' arithmetic
is right, and each checker refuses the known-wrong answer (a strided read handed in as the
coalesced one, an unpadded tile, a kernel without its grid-stride loop, a wrong occupancy,
a softmax without the launch bounds that fit it)."""

import functools
import math

import numba
import numpy as np
import pytest
import torch
from exercise_answers import without_pycuda
from numba import cuda, float32

import wd_teach
from wd_teach.device import nvcc_path
from wd_teach.exercises import lesson_10
from wd_teach.fundamentals import kernels_numba, measure, reference, sanitizer
from wd_teach.lessons.show import cuda_function

KERNELS_CU = (measure.__file__.rsplit("/", 1)[0]) + "/kernels.cu"
HEADER = "#define TILE 32\n#define GRAVITY 9.8f\n#define POLE_HALF_LENGTH 0.5f\n"


def cuda_c(name: str, rename: str | None = None) -> str:
    """One kernel of kernels.cu as a learner would hand it in (optionally under another
    name), with what it needs above it."""
    text = open(KERNELS_CU).read()
    needs = cuda_function(text, "fall") + "\n" if "carts" in name or "cart_" in name else ""
    body = cuda_function(text, name)
    return HEADER + needs + (body.replace(name, rename) if rename else body)


@pytest.fixture(scope="module")
def kernels():
    return measure.Kernels("numba")


def test_the_row_sums_read_either_layout_and_give_the_reference(kernels):
    probs = np.random.default_rng(0).random((70, 10), dtype=np.float32)
    for name, array in (("sum_rows", probs), ("sum_columns", probs.T.copy())):
        sums = torch.zeros(70)
        kernels.launch(name, 3, 32, torch.from_numpy(array).reshape(-1), sums, 70, 10)
        assert np.allclose(sums.numpy(), reference.sum_rows(probs))


@pytest.mark.parametrize("name", ["transpose_naive", "transpose_tiled", "transpose_padded"])
def test_every_transpose_gives_the_reference(kernels, name):
    src = np.random.default_rng(1).random((40, 70), dtype=np.float32)
    dst = torch.zeros(src.size)
    kernels.launch(name, (3, 2), (32, 32), torch.from_numpy(src).reshape(-1), dst, 40, 70)
    assert np.array_equal(dst.numpy().reshape(70, 40), reference.transpose(src))


@pytest.mark.parametrize("name, grid, block", [("push_cart_per_block", 50, 1),
                                               ("push_carts", 2, 8)])
def test_both_cart_kernels_move_every_env_once(kernels, name, grid, block):
    state = np.random.default_rng(2).uniform(-0.2, 0.2, (50, 4)).astype(np.float32)
    moved = torch.from_numpy(state.copy())
    kernels.launch(name, grid, block, moved.reshape(-1), 0.02, 50)
    assert np.allclose(moved.numpy(), reference.push_carts(state, 0.02), atol=1e-6)


@cuda.jit
def reverse_in_shared(values):
    """Reverses a block's values through dynamic shared memory: the array of shape 0 is
    the bytes the launch gave each block, and the kernel needs a float per thread."""
    staged = cuda.shared.array(0, float32)
    lane = cuda.threadIdx.x
    staged[lane] = values[lane]
    cuda.syncthreads()
    values[lane] = staged[cuda.blockDim.x - 1 - lane]


def test_a_launch_gives_each_block_the_dynamic_shared_memory_it_asks_for():
    kernels = measure.Kernels("numba", reverse_in_shared)
    values = torch.arange(32, dtype=torch.float32)
    kernels.launch("reverse_in_shared", 1, 32, values, shared=32 * 4)
    assert values.tolist() == list(range(31, -1, -1))
    reverse = kernels.bind("reverse_in_shared", values)  # bound once, launched twice
    reverse(1, 32, 32 * 4)
    reverse(1, 32, shared=32 * 4)
    assert values.tolist() == list(range(31, -1, -1))
    if numba.config.ENABLE_CUDASIM:  # on a GPU the same launch reads past the block's
        with pytest.raises(IndexError):  # shared memory: no bytes asked, the array is empty
            reverse(1, 32)
    with pytest.raises(wd_teach.WdTeachError, match="whole number"):
        reverse(1, 32, shared=-4)


def test_occupancy_names_the_limit_that_binds():
    assert measure.occupancy(30, 1024) == measure.Occupancy(2, 64, 1.0, "threads")
    assert measure.occupancy(64, 1024).limiter == "registers"  # half the warps
    assert measure.occupancy(64, 1024).fraction == 0.5
    assert measure.occupancy(32, 1).limiter == "blocks"  # CartPole's blocks of one thread
    assert measure.occupancy(16, 128, 100 * 1024).limiter == "shared memory"


def test_the_system_keeps_a_kiB_of_every_blocks_shared_memory():
    """45 KiB a block: 5 blocks in an H100's 228 KiB, but 4 with the 1 KiB kept of each."""
    assert measure.H100.reserved_shared_per_block == 1024
    assert measure.occupancy(16, 128, 45 * 1024).blocks_per_sm == 4
    if numba.config.ENABLE_CUDASIM:  # on a GPU, tests/gpu holds the card's own to these
        assert measure.card_limits() == measure.H100  # no GPU: the saved limits, named so
        assert "saved" in measure.card_limits().name


@pytest.mark.parametrize("limits", [measure.H100, lesson_10.A100])
@pytest.mark.parametrize("blocks", [16, 8, 4, 2, 1])
def test_the_shared_memory_for_an_occupancy_leaves_room_for_so_many_blocks(limits, blocks):
    shared = measure.shared_for_blocks(blocks, limits)
    assert measure.occupancy(32, 64, shared, limits).blocks_per_sm == blocks
    assert measure.occupancy(32, 64, shared - measure.SHARED_STEP, limits).blocks_per_sm > blocks


def test_occupancy_is_lowered_by_halves_within_what_a_block_may_ask_for():
    levels = measure.occupancy_levels(32)  # an H100, blocks of 64 threads
    assert [occ.fraction for _, occ in levels] == [1.0, 0.5, 0.25, 0.125]
    assert [occ.limiter for _, occ in levels] == ["threads"] + ["shared memory"] * 3
    assert levels[0][0] == 0 and all(s <= 48 * 1024 for s, _ in levels)
    assert [measure.percent(occ.fraction) for _, occ in levels] == ["100%", "50%", "25%",
                                                                   "12.5%"]


def test_what_occupancy_cost_is_said_from_the_measured_rates_only():
    def rates(width, *gb):
        return {("pycuda", width, f): g for f, g in zip((1.0, 0.5, 0.25, 0.125), gb,
                                                         strict=True)}
    said = measure.occupancy_cost({**rates(1, 2000, 1200, 600, 250),
                                   **rates(10, 2000, 1900, 1500, 800)})
    assert "1 float a row: GB/s as a share of 100% occupancy's: 100% at 100%, 60% at 50%" in said
    assert "lost more than 10% at the first step down; at 12.5% it took 8.0 times" in said
    assert "kept within 10% down to 50% occupancy; at 12.5% it took 2.5 times" in said
    assert "rows of 10 floats kept 40% of their GB/s, rows of 1 float 12%" in said
    flat = measure.occupancy_cost(rates(1, 2000, 1990, 1950, 1900))
    assert "did not slow this read here" in flat and "times as long" not in flat


def test_a_column_of_a_32_float_tile_is_one_bank_and_a_padded_one_spans_all():
    assert measure.bank_conflict_ways(32) == 32
    assert measure.bank_conflict_ways(33) == 1
    assert measure.bank_conflict_ways(10) == 2  # the sampler's rows of 10 actions


@pytest.mark.skipif(nvcc_path() is None, reason="nvcc is not on this machine")
def test_the_ptx_shows_the_padded_tile_and_launch_bounds():
    ptx = wd_teach.cuda_c.ptx(KERNELS_CU)
    assert measure.ptx_registers_and_bounds(ptx, "transpose_tiled")["shared_bytes"] == [4096]
    assert measure.ptx_registers_and_bounds(ptx, "transpose_padded")["shared_bytes"] == [4224]
    bounded = "extern \"C\" __global__ void __launch_bounds__(256) k(float* x) { x[0] = 1; }"
    assert measure.ptx_registers_and_bounds(wd_teach.cuda_c.ptx(bounded), "k")["maxntid"] == 256


# The checkers: the lesson's solutions pass here, the known-wrong answers do not.

@cuda.jit
def sum_columns(probs_t, sums, num_rows, num_actions):
    """Known wrong: the strided (row-major) index, handed in as the coalesced kernel."""
    row = cuda.blockIdx.x * cuda.blockDim.x + cuda.threadIdx.x
    if row >= num_rows:
        return
    total = float32(0.0)
    for action in range(num_actions):
        total += probs_t[row * num_actions + action]
    sums[row] = total


TILE = 32


@cuda.jit
def transpose_padded(src, dst, rows, cols):
    """Known wrong: right answers, through an unpadded tile (a 32-way bank conflict)."""
    tile = cuda.shared.array((TILE, TILE), float32)
    col = cuda.blockIdx.x * TILE + cuda.threadIdx.x
    row = cuda.blockIdx.y * TILE + cuda.threadIdx.y
    if row < rows and col < cols:
        tile[cuda.threadIdx.y, cuda.threadIdx.x] = src[row * cols + col]
    cuda.syncthreads()
    col = cuda.blockIdx.y * TILE + cuda.threadIdx.x
    row = cuda.blockIdx.x * TILE + cuda.threadIdx.y
    if row < cols and col < rows:
        dst[row * rows + col] = tile[cuda.threadIdx.x, cuda.threadIdx.y]


@cuda.jit
def push_carts(state, dt, num_envs):
    """Known wrong: one env per thread, no grid-stride loop."""
    env = cuda.blockIdx.x * cuda.blockDim.x + cuda.threadIdx.x
    if env < num_envs:
        kernels_numba.fall(state, env, dt)


def test_the_solutions_pass_where_they_run(monkeypatch):
    without_pycuda(monkeypatch)  # the CUDA C half cannot run: no verdict on the whole
    for check, kernel in ((lesson_10.check_sum_columns, kernels_numba.sum_columns),
                          (lesson_10.check_padded_transpose, kernels_numba.transpose_padded),
                          (lesson_10.check_grid_stride, kernels_numba.push_carts)):
        verdict = check(kernel, cuda_c(kernel.py_func.__name__), "numba")
        assert verdict.passed_here and verdict.right == ("Numba kernel",)
        assert not verdict  # the CUDA C half did not run: no verdict on the whole


def test_a_strided_read_is_not_the_coalesced_one(capsys):
    verdict = lesson_10.check_sum_columns(sum_columns, cuda_c("sum_columns"), "numba")
    assert verdict.wrong == ("Numba kernel",)
    assert "row-major (strided)" in capsys.readouterr().out


def test_an_unpadded_tile_is_refused_in_both_languages(capsys):
    unpadded = cuda_c("transpose_tiled", rename="transpose_padded")
    verdict = lesson_10.check_padded_transpose(transpose_padded, unpadded, "numba")
    assert "Numba kernel" in verdict.wrong
    if nvcc_path() is not None:  # CUDA C's tile is measured in its PTX
        assert "CUDA C kernel" in verdict.wrong
    assert "32-way conflict" in capsys.readouterr().out


def test_a_kernel_without_the_grid_stride_loop_leaves_envs_unmoved(capsys):
    verdict = lesson_10.check_grid_stride(push_carts, cuda_c("push_carts"), "numba")
    assert verdict.wrong == ("Numba kernel",)
    assert "36 of 100 environments are wrong" in capsys.readouterr().out


def test_the_occupancy_checker_takes_the_right_rule_and_refuses_a_wrong_one():
    assert lesson_10.check_occupancy(
        lambda regs, threads, shared, limits: measure.occupancy(
            regs, threads, shared, limits).blocks_per_sm)
    assert not lesson_10.check_occupancy(lambda regs, threads, shared, limits: 65536 // (
        regs * threads))


# compute-sanitizer: finding it, and reading its summary.

def test_the_sanitizers_summary_is_read_for_every_tool():
    assert sanitizer.errors_in("========= ERROR SUMMARY: 3 errors\n") == 3
    assert sanitizer.errors_in("========= ERROR SUMMARY: 0 errors\n") == 0
    assert sanitizer.errors_in("========= RACECHECK SUMMARY: 1 hazard displayed (1 error, "
                               "0 warnings)\n") == 1
    assert sanitizer.errors_in("python: not found") is None


def test_compute_sanitizer_is_found_in_a_pip_wheel(tmp_path, monkeypatch):
    tool = tmp_path / "nvidia" / "cu13" / "bin" / "compute-sanitizer"
    tool.parent.mkdir(parents=True)
    tool.write_text("#!/bin/sh\n")
    tool.chmod(0o755)
    monkeypatch.setenv("PATH", "/nonexistent")
    monkeypatch.delenv("CUDA_HOME", raising=False)
    monkeypatch.delenv("CUDA_PATH", raising=False)
    monkeypatch.setattr(sanitizer.sysconfig, "get_paths", lambda: {"purelib": str(tmp_path)})
    monkeypatch.setattr(sanitizer.glob, "glob", _only_under(tmp_path, sanitizer.glob.glob))
    assert sanitizer.find_compute_sanitizer() == str(tool)


def _only_under(root, glob):
    return lambda pattern: glob(pattern) if pattern.startswith(str(root)) else []


def test_every_kernel_has_a_run_and_every_broken_one_a_tool():
    assert set(sanitizer.FINDS) == set(sanitizer.BROKEN) <= set(sanitizer.RUNS)
    lesson = {n for n in vars(kernels_numba) if hasattr(getattr(kernels_numba, n), "py_func")}
    assert lesson - {"fall"} <= set(sanitizer.RUNS)


def test_blocks_per_sm_that_forgets_the_reserved_shared_memory_is_refused(capsys):
    def without_reserved(regs, threads, shared, limits):
        plain = measure.Limits(**{**vars(limits), "reserved_shared_per_block": 0})
        return measure.occupancy(regs, threads, shared, plain).blocks_per_sm

    assert not lesson_10.check_occupancy(without_reserved)
    assert "46080) gave 5; an H100 holds 4" in capsys.readouterr().out


def test_the_shared_memory_checker_takes_the_rule_and_refuses_near_misses(capsys):
    assert lesson_10.check_shared_for(measure.shared_for_blocks)
    capsys.readouterr()
    most = lesson_10.check_shared_for(  # the most that still fits: over 48 KiB for 4 blocks
        lambda blocks, limits: limits.shared_per_sm // blocks - limits.reserved_shared_per_block)
    assert not most and "more than a block may ask for" in capsys.readouterr().out
    no_reserve = lesson_10.check_shared_for(lambda blocks, limits: limits.shared_per_sm // (
        blocks + 1) + 1)
    assert not no_reserve and "holds 15 blocks of 64 threads, not 16" in capsys.readouterr().out
    assert not lesson_10.check_shared_for(lambda blocks, limits: None)
    assert "return a whole number" in capsys.readouterr().out


def test_an_unwritten_blocks_per_sm_is_told_to_return_a_number(capsys):
    assert not lesson_10.check_occupancy(lambda regs, threads, shared, limits: None)
    assert "returned None" in capsys.readouterr().out


def test_a_report_lists_the_tools_findings_without_its_summary():
    output = ("========= COMPUTE-SANITIZER\n"
              "========= Invalid __global__ write of size 4 bytes\n"
              "=========     at write_unguarded+0x70\n"
              "========= ERROR SUMMARY: 1 error\n")
    report = sanitizer.Report("memcheck", "write_unguarded", sanitizer.errors_in(output), output)
    assert report.errors == 1
    assert report.findings == ["Invalid __global__ write of size 4 bytes"]


def test_nsight_computes_metric_lines_are_picked_out(tmp_path, monkeypatch):
    fake = tmp_path / "ncu"
    fake.write_text("#!/bin/sh\necho '==PROF== Connected'\n"
                    "echo '    l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum  sector  40'\n")
    fake.chmod(0o755)
    monkeypatch.setattr(sanitizer.shutil, "which", lambda name: str(fake))
    assert sanitizer.nsight_compute("sum_rows") == (
        "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum  sector  40")
    monkeypatch.setattr(sanitizer.shutil, "which", lambda name: None)
    assert "not on this machine" in sanitizer.nsight_compute("sum_rows")


def test_the_warp_loads_picture_counts_the_lines_a_load_touches():
    """Lesson 10's picture: with rows of 10 floats a strided load of a warp spans 10 lines
    of 128 bytes, an action-major one fits in 1; the figure shows both, titled so."""
    from wd_teach.fundamentals import pictures

    strided = pictures.lane_addresses(10, action_major=False)
    coalesced = pictures.lane_addresses(10, action_major=True)
    assert len(set(strided // 128)) == 10 and len(set(coalesced // 128)) == 1
    fig = pictures.draw_warp_loads(10)
    titles = [ax.get_title(loc="left") for ax in fig.axes]
    assert len(titles) == 2 and "10 line(s)" in titles[0] and "1 line(s)" in titles[1]


def test_step_3_moves_the_same_bytes_at_every_width_with_rows_at_the_widest():
    floats = measure.same_bytes_at_every_width(measure.ROW_WIDTHS, "cpu")
    assert floats // max(measure.ROW_WIDTHS) == 32  # one warp of rows on the simulator
    assert min(measure.ROW_WIDTHS) == 10 and max(measure.ROW_WIDTHS) * 4 > 128  # past a line


def test_the_rate_rows_give_the_copys_and_the_cards_share():
    assert measure.H100.peak_gb_per_s == pytest.approx(2 * 2619e6 * 5120 / 8 / 1e9, rel=1e-3)
    if numba.config.ENABLE_CUDASIM:  # the simulator has no memory clock to read
        assert measure._peak_gb_per_s() is None
    row = measure.rate_row("k", 1676.0, 2000.0, 3352.0, seconds=0.001)
    assert (row["ms"], row["% of copy"], row["% of peak"]) == ("1.000", "84%", "50%")
    assert "% of peak" not in measure.rate_row("k", 1.0, 2.0)  # no peak known: no column


def test_what_the_stride_cost_is_said_from_the_measured_rates_only():
    def rates(*shares):
        return {**{("pycuda", w, "sum_columns"): 1000.0 for w in (10, 64, 512)},
                **{("pycuda", w, "sum_rows"): 1000.0 * s for w, s in zip((10, 64, 512),
                                                                      shares, strict=True)}}
    opened = measure.stride_cost(rates(0.99, 0.5, 0.25))
    assert "99% at 10, 50% at 64, 25% at 512" in opened
    assert "at 512 actions a row the row-major read took 4.0 times as long" in opened
    assert "No gap opened" in measure.stride_cost(rates(0.99, 0.97, 0.9))


def test_a_drop_that_comes_back_is_not_read_as_kept():
    rates = {("numba", 1, f): g for f, g in zip((1.0, 0.5, 0.25, 0.125), (2000, 1000, 1950, 500),
                                                 strict=True)}
    assert "lost more than 10% at the first step down" in measure.occupancy_cost(rates)


# Exercise 4: a heavy kernel bounded by __launch_bounds__.

def bounded_softmax(bounds: str = "__launch_bounds__(256, 8) ") -> str:
    """kernels.cu's softmax_rows as a learner hands it in, under `bounds`."""
    body = cuda_function(open(KERNELS_CU).read(), "softmax_rows")
    return "#define SOFTMAX_ACTIONS 32\n" + body.replace("void softmax_rows", "void " + bounds
                                                         + "softmax_rows")


@cuda.jit
def softmax_rows(logits, probs, num_rows):
    """Known wrong: exp of each logit, never divided by the row's total."""
    row = cuda.blockIdx.x * cuda.blockDim.x + cuda.threadIdx.x
    if row < num_rows:
        for a in range(32):
            probs[row * 32 + a] = math.exp(logits[row * 32 + a])


@functools.cache
def ptxas_here() -> bool:
    """nvcc makes PTX here and nvJitLink's ptxas counts a real kernel's registers in it."""
    return nvcc_path() is not None and measure.ptxas_usage(
        wd_teach.cuda_c.ptx(bounded_softmax()), "softmax_rows") is not None


def needs_ptxas():
    if not ptxas_here():
        pytest.skip("needs nvcc and NVIDIA's nvJitLink (pip install -e '.[dev]' and a CUDA "
                    "toolkit)")


def test_ptxas_counts_the_registers_the_bounds_leave():
    needs_ptxas()
    free = wd_teach.cuda_c.ptx(bounded_softmax(""))
    bound = wd_teach.cuda_c.ptx(bounded_softmax())
    assert measure.ptx_registers_and_bounds(free, "softmax_rows")["maxntid"] is None
    found = measure.ptx_registers_and_bounds(bound, "softmax_rows")
    assert (found["maxntid"], found["min_blocks"]) == (256, 8)
    unbounded, bounded = (measure.ptxas_usage(p, "softmax_rows") for p in (free, bound))
    assert unbounded["registers"] > 32 and unbounded["spill_bytes"] == 0
    assert bounded["registers"] <= 32 and bounded["spill_bytes"] > 0  # what did not fit
    # one kernel among several: each is counted by its own name
    assert measure.ptxas_usage(wd_teach.cuda_c.ptx(KERNELS_CU), "transpose_padded")[
        "registers"] < unbounded["registers"]
    assert measure.ptxas_usage(free, "no_such_kernel") is None


def bounded_numba():
    """softmax_rows under (256, 8) where Numba compiles for a GPU; the simulator takes no
    bounds (this file also runs in the GPU check, on a GPU)."""
    if wd_teach.discover().simulator:
        return kernels_numba.softmax_rows
    return cuda.jit(launch_bounds=(256, 8))(kernels_numba.softmax_rows.py_func)


def test_a_bounded_softmax_passes_where_it_runs_and_is_not_true_unrun(monkeypatch, capsys):
    without_pycuda(monkeypatch)
    verdict = lesson_10.check_launch_bounds(bounded_numba(), bounded_softmax(), "numba")
    assert verdict.passed_here and not verdict  # CUDA C did not run
    out = capsys.readouterr().out
    if wd_teach.discover().simulator:
        assert "were not read here" in out  # and the simulator read no bounds
    else:
        assert "Numba kernel: bounds (256, 8) in the PTX" in out
    if ptxas_here():
        assert "8 blocks of 256 fit an SM" in out


@pytest.mark.parametrize("bounds, said", [("", "(threads None, blocks an SM None)"),
                                          ("__launch_bounds__(1024) ", "(threads 1024"),
                                          ("__launch_bounds__(256, 2) ", "blocks an SM 2)")])
def test_a_softmax_without_the_right_bounds_is_refused(monkeypatch, capsys, bounds, said):
    needs_ptxas()
    without_pycuda(monkeypatch)
    verdict = lesson_10.check_launch_bounds(kernels_numba.softmax_rows,
                                            bounded_softmax(bounds), "numba")
    assert not verdict and "CUDA C kernel" in verdict.wrong
    assert said in capsys.readouterr().out


def test_a_softmax_that_never_divides_is_refused(monkeypatch, capsys):
    without_pycuda(monkeypatch)
    verdict = lesson_10.check_launch_bounds(softmax_rows, bounded_softmax(), "numba")
    assert verdict.wrong[0] == "Numba kernel" and not verdict.passed_here
    assert "70 of 70 rows' probabilities are wrong" in capsys.readouterr().out


@cuda.jit
def softmax_rows_one_block(logits, probs, num_rows):
    """Known wrong: a row per thread of the block, blocks forgotten (right in one block)."""
    row = cuda.threadIdx.x
    if row < num_rows:
        top = float32(-math.inf)
        for a in range(32):
            top = max(top, logits[row * 32 + a])
        total = float32(0.0)
        for a in range(32):
            total += math.exp(logits[row * 32 + a] - top)
        for a in range(32):
            probs[row * 32 + a] = math.exp(logits[row * 32 + a] - top) / total


@cuda.jit
def softmax_rows_unshifted(logits, probs, num_rows):
    """Known wrong: no max subtracted, so large logits overflow (right for small ones)."""
    row = cuda.blockIdx.x * cuda.blockDim.x + cuda.threadIdx.x
    if row < num_rows:
        total = float32(0.0)
        for a in range(32):
            total += math.exp(logits[row * 32 + a])
        for a in range(32):
            probs[row * 32 + a] = math.exp(logits[row * 32 + a]) / total


@pytest.mark.parametrize("kernel, rows, hint", [
    (softmax_rows_one_block, "38 of 70", "the first block's 32 rows are right and no later"),
    (softmax_rows_unshifted, "1 of 70", "only row 69 is wrong, whose logits are 100 above")])
def test_a_softmax_right_only_by_luck_is_refused(monkeypatch, capsys, kernel, rows, hint):
    without_pycuda(monkeypatch)
    kernel.py_func.__name__ = "softmax_rows"  # the name the checker launches
    verdict = lesson_10.check_launch_bounds(kernel, bounded_softmax(), "numba")
    assert verdict.wrong[0] == "Numba kernel" and not verdict.passed_here
    said = capsys.readouterr().out
    assert f"{rows} rows' probabilities are wrong" in said and f"Hint: {hint}" in said


def test_a_softmax_wrong_everywhere_gets_the_steps_as_its_hint():
    assert lesson_10._softmax_hint(np.ones(70, bool)).startswith("subtract the row's largest")
    some = np.zeros(70, bool)
    some[[3, 40]] = True
    assert lesson_10._softmax_hint(some).startswith("subtract the row's largest")


def test_ptxas_usage_is_none_for_ptx_it_cannot_build():
    assert measure.ptxas_usage(".version 99.0\n.target sm_999\n", "k") is None


def test_without_ptxas_the_bounds_are_still_read_and_the_half_is_not_run(monkeypatch, capsys):
    if nvcc_path() is None:
        pytest.skip("needs nvcc for the PTX")
    without_pycuda(monkeypatch)
    monkeypatch.setattr(measure, "ptxas_usage", lambda ptx, name, arch="sm_90": None)
    verdict = lesson_10.check_launch_bounds(bounded_numba(), bounded_softmax(""), "numba")
    assert "CUDA C kernel" in verdict.wrong  # no bounds: wrong, tool or not
    verdict = lesson_10.check_launch_bounds(bounded_numba(), bounded_softmax(), "numba")
    assert verdict.passed_here and not verdict
    assert "not here to count its registers" in capsys.readouterr().out


def test_a_card_of_fewer_threads_an_sm_is_named_not_refused(capsys):
    t4 = measure.Limits("Tesla T4 (an example)", sms=40, threads_per_sm=1024, blocks_per_sm=16,
                        registers_per_sm=65536, shared_per_sm=64 * 1024,
                        reserved_shared_per_block=0)
    ptx = ".visible .entry softmax_rows(\n)\n.maxntid 256, 1, 1\n.minnctapersm 8\n{\nret;\n}\n"
    assert lesson_10._bounded("CUDA C kernel", ptx, {"registers": 32}, t4)
    assert "an SM of the Tesla T4 (an example) holds 4" in capsys.readouterr().out
    assert not lesson_10._bounded("CUDA C kernel", ptx, {"registers": 40}, t4)
    assert "registers let an SM hold 6 blocks of 256, not 8" in capsys.readouterr().out


def test_several_kernels_go_under_the_tool_in_one_program(monkeypatch):
    """The GPU check puts all of the lesson's clean kernels under each tool at once: one
    command, every name in it, in order; a name it does not know is refused first."""
    commands = []
    monkeypatch.setattr(sanitizer, "_under_tool",
                        lambda tool, arguments: commands.append((tool, arguments)) or (0, ""))
    report = sanitizer.sanitize(["sum_rows", "push_carts"], "racecheck", "pycuda")
    assert commands == [("racecheck", ["-m", sanitizer.MODULE, "sum_rows", "push_carts",
                                       "--backend", "pycuda"])]
    assert report.kernel == "sum_rows push_carts" and report.errors == 0
    sanitizer.sanitize("count_lost", "racecheck")
    assert commands[-1][1][2:4] == ["count_lost", "--backend"]
    for bad, says in ((["sum_rows", "sum_everything"], "'sum_everything'"), ([], "none given")):
        with pytest.raises(ValueError, match=says):
            sanitizer.sanitize(bad, "memcheck")
    assert len(commands) == 2

    launched = []
    monkeypatch.setattr(sanitizer, "_run", lambda names, backend: launched.append(names))
    sanitizer.main(["sum_rows", "transpose_naive", "--backend", "numba"])
    assert launched == [["sum_rows", "transpose_naive"]]
    with pytest.raises(SystemExit):
        sanitizer.main(["save", "sum_rows"])
