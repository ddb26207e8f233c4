"""bench/sass.py: what the compiler made of an env's kernels, read without a GPU. Its parsing
of ptxas's and cuobjdump's words on fixed text, and the script itself on the Tag game with
the grid search, both backends (it needs the CUDA toolkit's nvcc and ptxas, and cuobjdump)."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]

PTXAS_LOG = """\
ptxas info    : 0 bytes gmem
ptxas info    : Compiling entry function 'first' for 'sm_90'
ptxas info    : Function properties for first
    8 bytes stack frame, 4 bytes spill stores, 12 bytes spill loads
ptxas info    : Used 40 registers, used 1 barriers, 1536 bytes smem, 400 bytes cmem[0]
ptxas info    : Compiling entry function 'second' for 'sm_90'
ptxas info    : Function properties for second
    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
ptxas info    : Used 63 registers, used 0 barriers, 400 bytes cmem[0]
"""

SASS_LISTING = """\
	code for sm_90
		Function : first
	.headerflags	@"EF_CUDA_SM90 EF_CUDA_VIRTUAL_SM(EF_CUDA_SM90)"
        /*0000*/                   LDC R1, c[0x0][0x28] ;
        /*0010*/                   S2R R0, SR_TID.X ;
        /*0020*/              @!P0 BRA 0x70 ;
        /*0030*/                   EXIT ;
        /*0040*/                   BRA 0x40;
        /*0050*/                   NOP;
		Function : second
        /*0000*/                   FFMA R2, R3, R4, R5 ;
        /*0010*/               @P1 EXIT ;
"""


def test_ptxas_words_are_read_for_the_function_asked(bench_script):
    module = bench_script("sass")
    assert module.ptxas_counts(PTXAS_LOG, "first") == (4, 12, 40, 1536)
    assert module.ptxas_counts(PTXAS_LOG, "second") == (0, 0, 63, 0)
    with pytest.raises(ValueError, match="nothing of registers"):
        module.ptxas_counts("ptxas info    : 0 bytes gmem\n")


def test_sass_counts_each_functions_instructions_without_the_padding(bench_script):
    # predicated instructions count; the NOP after the last branch does not
    assert bench_script("sass").sass_instructions(SASS_LISTING) == {"first": 5, "second": 2}


def test_a_numba_row_made_in_the_test_process_has_counts_only_off_the_simulator(bench_script):
    """Importing the script leaves Numba's target alone. On the simulator (a CPU), which
    writes no PTX, a Numba row made here says so and has no counts, rather than counts of
    nothing; on a GPU, where Numba compiles for real, the same row has its counts."""
    module = bench_script("sass")
    from wd_teach._simulator import simulator_on
    from wd_teach_envs.tag_continuous import TagContinuous

    env = TagContinuous()
    on = simulator_on()
    if not on and module.tool("ptxas") is None:
        pytest.skip("a GPU without ptxas (the CUDA toolkit) on PATH: nothing to read with")
    row = module.numba_row(env, "tag_catch", env.numba_kernels(), "sm_90", twin=False)
    assert simulator_on() is on  # the script changed nothing
    if on:
        assert row.registers is None and row.instructions is None
        assert "simulator" in row.note
    else:
        assert 0 < row.registers <= 255 and row.spill_stores == 0, row


def run_script(bench_script, tmp_path, game):
    """bench/sass.py's rows for `game` with the grid search, from a fresh process (Numba off
    its simulator); skips where a piece of the CUDA toolkit is missing."""
    module = bench_script("sass")
    missing = [t for t in ("nvcc", "ptxas", "cuobjdump") if module.tool(t) is None]
    if missing:
        pytest.skip(f"not on this machine: {', '.join(missing)} (the CUDA toolkit)")
    out = tmp_path / f"{game}.json"
    done = subprocess.run([sys.executable, str(REPO / "bench" / "sass.py"), game, "--search",
                           "grid", "--loops", "--json", str(out)],
                          capture_output=True, text=True, timeout=600, cwd=REPO)
    if done.returncode != 0 and "libnvvm" in done.stderr.lower():
        pytest.skip("Numba's CUDA compiler (NVVM) is not installed here")
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(out.read_text())["rows"], done.stdout


def test_the_script_reads_every_kernel_of_the_grid_game_in_both_backends(tmp_path, bench_script):
    rows, stdout = run_script(bench_script, tmp_path, "tag_continuous")
    seen = {(r["kernel"], r["backend"]) for r in rows}
    kernels = {"tag_continuous_move", "tag_catch", "tag_nearest_grid",
               "tag_continuous_observe", "tag_continuous_observe_fast"}
    assert seen == {(k, b) for k in kernels for b in ("cuda_c", "numba")}
    for r in rows:
        assert r["note"] == "", r
        # No kernel spills to local memory, in either backend, at the launch bound it
        # declares (1,024 threads for the searches and observes: 64 registers a thread).
        # Numba's grid search did, 84 bytes, while its walk's integers were int64
        # (nearest_numba.py, step 4).
        assert (r["spill_stores"], r["spill_loads"]) == (0, 0), r
        assert 0 < r["registers"] <= 255 and r["instructions"] > 50, r
        assert r["twin"] == (r["kernel"] == "tag_continuous_observe_fast")
    grid = [r for r in rows if r["kernel"] == "tag_nearest_grid"]
    assert all(r["shared_bytes"] > 30_000 for r in grid)  # the env's grid in shared memory
    assert "tag_nearest_grid" in stdout and "SASS" in stdout and "loops as they close" in stdout
    # every kernel loops (over tiles, cells, slots or a run) but the move, one agent's step
    looping = {r["kernel"] for r in rows if r["loops"]}
    assert looping == kernels - {"tag_continuous_move"}
    assert all(lp["instructions"] > 0 for r in rows for lp in r["loops"])


@pytest.mark.parametrize("game", ["tag_continuous", "tag_grid"])
def test_the_numba_twins_neighbour_loop_is_no_longer_than_cs(tmp_path, bench_script, game):
    """The observe twin's loop over neighbour slots (each slot's loads from global memory and
    its features stored to the stage) in Numba, against the same loop in C, for sm_90.
    Through views of the stage and lesson 06's helpers, with int64 indices checked for a
    negative value, Numba's was 266 instructions to C's 192; with uint32 offsets, 158
    (envs/tag_continuous/observe_fast_numba.py)."""
    rows, _ = run_script(bench_script, tmp_path, game)

    def longest_slot_loop(backend):
        (row,) = [r for r in rows if r["twin"] and r["backend"] == backend]
        slots = [lp["instructions"] for lp in row["loops"]
                 if lp["loads"] > 0 and lp["shared_stores"] >= 4]
        assert slots, f"no loop over neighbour slots found in {backend}'s twin"
        return max(slots)

    assert longest_slot_loop("numba") <= longest_slot_loop("cuda_c")
