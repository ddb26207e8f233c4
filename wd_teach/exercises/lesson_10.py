"""Checkers for 10_gpu_fundamentals: a coalesced read, a transpose without bank conflicts, a
grid-stride loop (each in Numba and CUDA C), the occupancy of a kernel from the card's
limits, and the shared memory that lowers it to a given number of blocks an SM (Python).

Speed is a property of the addresses a warp touches, and these checks look at exactly that,
never at a clock: the coalesced kernel is handed the probabilities action-major, so one that
reads them row by row (strided) gets the wrong sums; the transpose's shared tile is measured
(its bytes in the PTX for CUDA C and for Numba on a GPU, its shape on the simulator) and a
row of 32 floats puts a warp's column in one bank; the grid-stride kernel is launched with
fewer threads than environments, so one without the loop leaves environments unmoved.

As in every two-language exercise (cuda_c_check.check_halves), the verdict is true only when
both halves ran and were right.
"""

from __future__ import annotations

import contextlib
import re

import numpy as np
import torch

from wd_teach import cuda_c
from wd_teach.device import discover, nvcc_path
from wd_teach.errors import WdTeachError
from wd_teach.exercises.cuda_c_check import LABEL, check_halves, kernel_body, run_learner_code
from wd_teach.exercises.verdict import Verdict, verdict_of
from wd_teach.fundamentals import measure, reference

#: Sizes that are not multiples of a block or a tile, so that guards are needed.
ROWS, TILE_ROWS, TILE_COLS, ENVS = 70, 20, 40, 100
SOFTMAX_ACTIONS = 32  # a row of logits of Exercise 4 (kernels.cu's SOFTMAX_ACTIONS)


def check_sum_columns(numba_kernel, cuda_c_source, backend) -> Verdict:
    """sum_columns(probs_t, sums, num_rows, num_actions): each row's total, read
    action-major (coalesced)."""
    def run(half, label):
        rng = np.random.default_rng()
        probs = rng.random((ROWS, 10), dtype=np.float32)
        kernels = _load(half, numba_kernel, cuda_c_source, label)
        if kernels is None:
            return False
        sums = torch.zeros(ROWS, device=kernels.device)
        probs_t = torch.from_numpy(probs.T.copy()).to(kernels.device).reshape(-1)
        if not _launch(kernels, label, "sum_columns", measure.blocks_for(ROWS, 32), 32,
                       probs_t, sums, ROWS, 10):
            return False
        got, want = sums.cpu().numpy(), reference.sum_rows(probs)
        if np.allclose(got, want, rtol=1e-5):
            print(f"{label}: every row's total is right, read action-major (coalesced).")
            return True
        strided = probs.T.reshape(-1)[:ROWS * 10].reshape(ROWS, 10).sum(axis=1)
        print(f"{label}: {int((~np.isclose(got, want)).sum())} of {ROWS} totals are wrong.")
        if np.allclose(got, strided, rtol=1e-5):
            print("Hint: that is row * num_actions + action, the row-major (strided) index. "
                  "probs_t is action-major: action * num_rows + row.")
        return False

    return _halves(backend, run, cuda_c_source, "sum_columns",
                   "each row's total, read action-major: a warp's lanes on consecutive floats.")


def check_padded_transpose(numba_kernel, cuda_c_source, backend) -> Verdict:
    """transpose_padded(src, dst, rows, cols): through a shared tile whose columns a warp
    reads without bank conflicts."""
    def run(half, label):
        rng = np.random.default_rng()
        src = rng.random((TILE_ROWS, TILE_COLS), dtype=np.float32)
        kernels = _load(half, numba_kernel, cuda_c_source, label)
        if kernels is None:
            return False
        dst = torch.zeros(src.size, device=kernels.device)
        grid = (measure.blocks_for(TILE_COLS, 32), measure.blocks_for(TILE_ROWS, 32))
        with _shared_shapes(kernels) as shapes:
            if not _launch(kernels, label, "transpose_padded", grid, (32, 32),
                           torch.from_numpy(src).to(kernels.device).reshape(-1), dst,
                           TILE_ROWS, TILE_COLS):
                return False
        if not np.array_equal(dst.cpu().numpy().reshape(TILE_COLS, TILE_ROWS),
                              reference.transpose(src)):
            print(f"{label}: the transpose is wrong. Hint: write the tile at [ty][tx], "
                  "__syncthreads(), then read it at [tx][ty] with the block's x and y swapped.")
            return False
        widths = shapes or _tile_widths(kernels, "transpose_padded")
        return _no_conflict(label, widths)

    return _halves(backend, run, cuda_c_source, "transpose_padded",
                   "the transpose is right, through a tile a warp reads without conflicts.",
                   unrun_tile=True)


def check_grid_stride(numba_kernel, cuda_c_source, backend) -> Verdict:
    """push_carts(state, dt, num_envs): every env, by a grid of fewer threads than envs."""
    def run(half, label):
        rng = np.random.default_rng()
        state = rng.uniform(-0.2, 0.2, (ENVS, 4)).astype(np.float32)
        kernels = _load(half, numba_kernel, cuda_c_source, label)
        if kernels is None:
            return False
        moved = torch.from_numpy(state.copy()).to(kernels.device).reshape(-1)
        if not _launch(kernels, label, "push_carts", 2, 32, moved, 0.02, ENVS):
            return False
        got = moved.cpu().numpy().reshape(ENVS, 4)
        wrong = ~np.isclose(got, reference.push_carts(state, 0.02), atol=1e-6).all(axis=1)
        if not wrong.any():
            print(f"{label}: {ENVS} environments, 64 threads: every one moved once.")
            return True
        print(f"{label}: {int(wrong.sum())} of {ENVS} environments are wrong (first: "
              f"{int(np.flatnonzero(wrong)[0])}), with a grid of 2 blocks of 32 threads.")
        print("Hint: loop: env starts at blockIdx.x * blockDim.x + threadIdx.x and steps by "
              "gridDim.x * blockDim.x while env < num_envs.")
        return False

    return _halves(backend, run, cuda_c_source, "push_carts",
                   "every environment moved once, by a grid smaller than the environments.")


#: Exercise 4's launch: blocks of BOUND_THREADS threads, BOUND_BLOCKS of them on an SM at
#: once, which leaves each thread 65,536 / (256 x 8) = 32 registers.
BOUND_THREADS, BOUND_BLOCKS = 256, 8


def check_launch_bounds(numba_kernel, cuda_c_source, backend) -> Verdict:
    """softmax_rows(logits, probs, num_rows): each row's softmax, compiled under
    __launch_bounds__(256, 8) (Numba: launch_bounds=(256, 8)), so that ptxas keeps it to 32
    registers a thread and an SM holds 8 blocks of 256 threads: full occupancy. The bounds
    are read from the PTX and the registers from the compiled kernel, never from the words.
    """
    def run(half, label):
        rng = np.random.default_rng()
        logits = (3 * rng.standard_normal((ROWS, SOFTMAX_ACTIONS))).astype(np.float32)
        logits[-1] += 100  # exp(100) overflows a float: only a softmax that subtracts the max
        kernels = _load(half, numba_kernel, cuda_c_source, label)
        if kernels is None:
            return False
        probs = torch.zeros(logits.size, device=kernels.device)
        # blocks of 32 (within the bounds' 256): three of them, so a row must count blocks
        if not _launch(kernels, label, "softmax_rows", measure.blocks_for(ROWS, 32), 32,
                       torch.from_numpy(logits).to(kernels.device).reshape(-1), probs, ROWS):
            return False
        got = probs.cpu().numpy().reshape(ROWS, SOFTMAX_ACTIONS)
        wrong = ~np.isclose(got, reference.softmax_rows(logits), rtol=1e-5, atol=1e-7).all(1)
        if wrong.any():
            print(f"{label}: {int(wrong.sum())} of {ROWS} rows' probabilities are wrong "
                  f"(first: row {int(np.flatnonzero(wrong)[0])}).")
            print("Hint: " + _softmax_hint(wrong))
            return False
        if not kernels.backend.reads_cuda_c and discover().simulator:
            return ("its probabilities are right; the simulator compiles nothing, so its "
                    "launch bounds and registers were not read here (on a GPU they are)")
        ptx = measure.compiled_ptx(kernels, "softmax_rows")
        usage = {"registers": measure.registers(kernels, "softmax_rows"),
                 "spill_bytes": (measure.ptxas_usage(ptx, "softmax_rows") or {}).get(
                     "spill_bytes")}
        return _bounded(label, ptx, usage, measure.card_limits())

    return _halves(backend, run, cuda_c_source, "softmax_rows",
                   "every softmax is right, under launch bounds that fit 8 blocks of 256 "
                   "threads on an SM.", bounds=True)


def _softmax_hint(wrong: np.ndarray) -> str:
    """What to look at, from which rows were wrong (the first block's 32 rows right and
    every later one wrong: the block index; only the last row, 100 above: the max)."""
    if not wrong[:32].any() and wrong[32:].all():
        return ("the first block's 32 rows are right and no later block's: each thread's row "
                "is blockIdx.x * blockDim.x + threadIdx.x (Numba: cuda.grid(1)), not "
                "threadIdx.x alone.")
    if wrong[-1] and not wrong[:-1].any():
        return (f"only row {len(wrong) - 1} is wrong, whose logits are 100 above the others': "
                "expf of them overflows a float. Subtract the row's largest logit first.")
    return ("subtract the row's largest logit, take expf of each, and divide each by their "
            "total.")


def _bounds_in_ptx(label, ptx) -> bool:
    found = measure.ptx_registers_and_bounds(ptx, "softmax_rows")
    want = (BOUND_THREADS, BOUND_BLOCKS)
    if (found["maxntid"], found["min_blocks"]) != want:
        print(f"{label}: its launch bounds are (threads {found['maxntid']}, blocks an SM "
              f"{found['min_blocks']}) in the PTX, not {want} (None: not given).")
        print("Hint: CUDA C: __launch_bounds__(256, 8) between __global__ void and the name; "
              "Numba: @cuda.jit(launch_bounds=(256, 8)), on a GPU.")
        return False
    return True


def _bounded(label, ptx, usage, limits=measure.H100) -> bool:
    """The launch bounds in the PTX, and the registers ptxas gave under them (`usage`), let
    an SM hold BOUND_BLOCKS blocks of BOUND_THREADS threads as far as registers go; the
    occupancy said is `limits`' card's (a card of fewer threads an SM holds fewer)."""
    if not _bounds_in_ptx(label, ptx):
        return False
    regs = usage["registers"]
    by_registers = measure.blocks_by_registers(regs, BOUND_THREADS, limits)
    spilled = usage.get("spill_bytes")
    said = (f"{regs} registers a thread"
            + (f", {spilled} bytes spilled to local memory" if spilled is not None else ""))
    if by_registers < BOUND_BLOCKS:
        print(f"{label}: {said}: registers let an SM hold {by_registers} blocks of "
              f"{BOUND_THREADS}, not {BOUND_BLOCKS}.")
        return False
    occ = measure.occupancy(regs, BOUND_THREADS, 0, limits)
    if occ.blocks_per_sm >= BOUND_BLOCKS:
        print(f"{label}: bounds (256, 8) in the PTX; ptxas gave {said}: {occ.blocks_per_sm} "
              f"blocks of {BOUND_THREADS} fit an SM ({occ.fraction:.0%} occupancy).")
    else:
        print(f"{label}: bounds (256, 8) in the PTX; ptxas gave {said}: registers let "
              f"{BOUND_BLOCKS} blocks of {BOUND_THREADS} share an SM, and an SM of the "
              f"{limits.name} holds {occ.blocks_per_sm} (its {occ.limiter} limit binds).")
    return True


@verdict_of("occupancy")
def check_occupancy(blocks_per_sm) -> bool:
    """blocks_per_sm(registers_per_thread, threads_per_block, shared_per_block, limits):
    the blocks an SM holds at once, against measure.occupancy on cases where each limit
    binds."""
    cases = [(30, 1024, 0), (64, 1024, 0), (32, 1, 0), (40, 256, 0), (16, 128, 48 * 1024),
             (255, 256, 0), (20, 96, 0), (16, 128, 45 * 1024)]
    for case in cases:
        regs, threads, shared = case
        want = measure.occupancy(regs, threads, shared, measure.H100)
        answer = run_learner_code(lambda: (blocks_per_sm(*case, measure.H100),),  # noqa: B023
                                  "blocks_per_sm", "it takes (registers_per_thread, "
                                  "threads_per_block, shared_per_block, limits).", None)
        if answer is None:  # it raised, and run_learner_code said what
            return False
        got = answer[0]
        if got is None:
            print("blocks_per_sm returned None: write it, and return a whole number.")
            return False
        if got != want.blocks_per_sm:
            print(f"blocks_per_sm({regs}, {threads}, {shared}) gave {got}; an H100 holds "
                  f"{want.blocks_per_sm} (the {want.limiter} limit binds).")
            print("Hint: whole warps per block; registers per warp rounded up to 256; a "
                  "block's shared memory plus the reserved_shared_per_block the system keeps; "
                  "the smallest of the four limits wins.")
            return False
    print(f"blocks_per_sm: right on {len(cases)} kernels, each of the four limits binding.")
    return True


#: A second card for check_shared_for, so that a right answer is a rule and not an H100's
#: numbers: an A100's limits (compute capability 8.0; CUDA C Programming Guide).
A100 = measure.Limits("NVIDIA A100 (saved limits)", sms=108, threads_per_sm=2048,
                      blocks_per_sm=32, registers_per_sm=65536, shared_per_sm=164 * 1024,
                      reserved_shared_per_block=1024)


@verdict_of("shared memory for an occupancy")
def check_shared_for(shared_for) -> bool:
    """shared_for(blocks, limits): the bytes of dynamic shared memory a block of Step 6's
    launch (measure.OCCUPANCY_BLOCK threads) asks for so that an SM holds `blocks` of them,
    judged by what measure.occupancy (the table's computation) makes of the answer, on an
    H100 and an A100."""
    threads = measure.OCCUPANCY_BLOCK
    for limits, blocks in ((measure.H100, 16), (measure.H100, 8), (measure.H100, 4),
                           (A100, 8), (A100, 4)):
        answer = run_learner_code(lambda: (shared_for(blocks, limits),),  # noqa: B023
                                  "shared_for", "it takes (blocks, limits).", None)
        if answer is None:  # it raised, and run_learner_code said what
            return False
        got, card = answer[0], limits.name.split(" (")[0]
        if not isinstance(got, (int, np.integer)) or isinstance(got, bool) or got < 0:
            print(f"shared_for({blocks}, {card}) returned {got!r}: return a whole number of "
                  "bytes, 0 or more.")
            return False
        if got > limits.shared_per_block:
            print(f"shared_for({blocks}, {card}) asks for {got:,} bytes, more than a block "
                  f"may ask for ({limits.shared_per_block:,}) without opting in to more. "
                  f"Hint: the least amount that leaves room for {blocks} blocks and no more "
                  "is enough.")
            return False
        held = measure.occupancy(32, threads, int(got), limits).blocks_per_sm
        if held != blocks:
            print(f"shared_for({blocks}, {card}) gave {got:,} bytes: an SM of the {card} "
                  f"then holds {held} blocks of {threads} threads, not {blocks}.")
            print("Hint: a block takes what it asks for plus reserved_shared_per_block; "
                  f"{blocks + 1} of them must not fit in shared_per_sm, {blocks} must.")
            return False
    print("shared_for: right on an H100 (16, 8 and 4 blocks an SM) and an A100 (8 and 4).")
    return True


# What the three kernel checkers share.

def _halves(backend, run, source, name, whole, unrun_tile=False, bounds=False) -> Verdict:
    if not isinstance(source, str) or not source.strip():
        print(f"{LABEL}: write the CUDA C source as a string.")
    return check_halves(backend, run, lambda: _compiles(source, name, unrun_tile, bounds),
                        whole)


def _load(half, numba_kernel, source, label):
    kernels = run_learner_code(
        lambda: measure.Kernels(half, source if half.reads_cuda_c else numba_kernel),
        label, "the kernel's name and parameters are given in the cell.")
    return kernels


def _launch(kernels, label, name, grid, block, *args) -> bool:
    return run_learner_code(lambda: kernels.launch(name, grid, block, *args) or True,
                            f"{label} ({name})", "the kernel's name and parameters are given "
                            "in the cell.") is not None


def _compiles(source, name, tile: bool, bounds: bool = False) -> bool:
    """Where PyCUDA cannot run: the kernel exists, has a body, and nvcc compiles it (when it
    is here); for the transpose, its tile is measured in the PTX; for the bounded softmax,
    its bounds are read in the PTX and its registers from ptxas (through nvJitLink)."""
    try:
        signatures = cuda_c.kernel_signatures(source)
    except (WdTeachError, TypeError) as err:
        print(f"{LABEL}: {err}")
        return False
    if name not in signatures or not kernel_body(source, name):
        print(f'{LABEL}: write the extern "C" __global__ kernel {name}, with its body.')
        return False
    if nvcc_path() is None:
        print(f"{LABEL}: it has a body; nvcc is not here to compile it, nor a GPU to run it.")
        return True
    try:
        ptx = cuda_c.ptx(source)
    except WdTeachError as err:
        print(f"{LABEL}: {err}")
        return False
    if tile and not _no_conflict(LABEL, _ptx_tile_widths(ptx, name)):
        return False
    if bounds:
        usage = measure.ptxas_usage(ptx, name)
        if usage is None:  # a missing tool is no wrong answer: the half is only not run
            if not _bounds_in_ptx(LABEL, ptx):
                return False
            print(f"{LABEL}: bounds (256, 8) in the PTX. ptxas (NVIDIA's nvJitLink library) "
                  "is not here to count its registers, so they were not checked: pip install "
                  "'numba-cuda[cu13]'.")
            return True
        if not _bounded(LABEL, ptx, usage):
            return False
    print(f"{LABEL}: nvcc compiles it. It was NOT run, so what it computes was not checked.")
    return True


def _no_conflict(label, widths) -> bool:
    if not widths:
        print(f"{label}: no shared tile found: stage the tile in shared memory.")
        return False
    ways = max(measure.bank_conflict_ways(w) for w in widths)
    if ways > 1:
        print(f"{label}: its tile's rows are {widths[0]} floats, so a warp reading a column "
              f"hits one bank {ways} times over ({ways}-way conflict). Hint: pad each row by "
              "one float.")
        return False
    print(f"{label}: its tile's rows are {widths[0]} floats: a column spans 32 banks.")
    return True


def _ptx_tile_widths(ptx: str, name: str) -> list[int]:
    entry = next((e for e in re.split(r"(?=\.visible \.entry)", ptx) if name in e[:200]), ptx)
    return [int(n) // 4 // 32 for n in measure.ptx_registers_and_bounds(
        entry, re.search(r"\.entry (\w+)\(", entry).group(1))["shared_bytes"]]


def _tile_widths(kernels, name) -> list[int]:
    """The shared tile's row length from the compiled kernel's PTX (PyCUDA: nvcc's PTX of
    the same source; Numba on a GPU: what it compiled)."""
    if kernels.backend.reads_cuda_c:
        return _ptx_tile_widths(cuda_c.ptx(kernels.source), name)
    ptx = "\n".join(kernels.kernel(name).inspect_asm().values())
    return [int(n) // 4 // 32 for n in re.findall(r"\.shared\s+\.align\s+\d+\s+\.b8\s+[\w$.]+"
                                                   r"\[(\d+)\]", ptx)]


@contextlib.contextmanager
def _shared_shapes(kernels):
    """On Numba's simulator: the row length of every 2-D shared array the kernel asks for
    (shapes filled in as it runs). Elsewhere an empty list: the PTX says instead."""
    widths: list[int] = []
    if kernels.backend.reads_cuda_c or not discover().simulator:
        yield widths
        return
    from numba.cuda.simulator import kernelapi

    original = kernelapi.FakeCUDAShared.array

    def recorded(self, shape, dtype, alignment=None):
        if isinstance(shape, tuple) and len(shape) == 2 and shape[1] not in widths:
            widths.append(int(shape[1]))
        return original(self, shape, dtype, alignment)

    kernelapi.FakeCUDAShared.array = recorded
    try:
        yield widths
    finally:
        kernelapi.FakeCUDAShared.array = original
