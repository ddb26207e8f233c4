"""On a GPU the spacing exercise of 05_custom_env runs in both languages: a right answer's
verdict is true, and a barrier that spare threads never reach (inside `if agent <
num_agents:`) is read from the code and not launched, in Numba and in CUDA C (it could
hang)."""

import pytest
from exercise_answers import (
    SPACING_C_BARRIER_IN_BRANCH,
    SPACING_CU,
    make_barrier_in_branch,
    spacing_step,
)

import wd_teach
from wd_teach.exercises import barriers, lesson_05


def test_a_right_spacing_step_runs_in_both_languages_and_its_verdict_is_true(capsys):
    assert "pycuda" in wd_teach.discover().backends, "these tests need PyCUDA on the GPU"
    verdict = lesson_05.check_spacing_step(spacing_step, SPACING_CU, "pycuda")
    assert verdict and verdict.passed_here
    out = capsys.readouterr().out
    assert "All right" in out and "NOT" not in out


@pytest.mark.parametrize("numba_kernel, cuda_c, backend, label", [
    (make_barrier_in_branch(), SPACING_CU, "numba", "Numba kernel"),
    (spacing_step, SPACING_C_BARRIER_IN_BRANCH, "pycuda", "CUDA C kernel"),
])
def test_a_barrier_in_a_branch_is_rejected_without_a_launch(numba_kernel, cuda_c, backend,
                                                            label, capsys):
    verdict = lesson_05.check_spacing_step(numba_kernel, cuda_c, backend)
    assert not verdict and not verdict.passed_here
    out = capsys.readouterr().out
    assert f"{label}: read from its code and not run" in out
    assert "never reach the barrier" in out and "All right" not in out


def test_compute_sanitizer_runs_the_cuda_c_under_synccheck(capsys):
    """Where compute-sanitizer is here, the learner's CUDA C runs under synccheck: a right
    kernel passes it. A barrier that spare threads skip altogether is not one that synccheck
    flags (measured on an H200, sm_90: threads that never reach any barrier are not
    "divergent" to it), so that answer stays refused by the code reading above, before any
    launch; here the tool must at least run it to the end and report no crash."""
    if barriers.compute_sanitizer() is None:
        pytest.skip("compute-sanitizer is not on this machine")
    num_envs, num_agents = lesson_05.spacing_check_sizes()
    block = (num_agents // lesson_05.WARP + 1) * lesson_05.WARP
    args = (str(num_envs), str(num_agents), str(block))
    assert barriers.synccheck(lesson_05.SYNCCHECK_SCRIPT, *args, stdin=SPACING_CU) == []
    found = barriers.synccheck(lesson_05.SYNCCHECK_SCRIPT, *args,
                               stdin=SPACING_C_BARRIER_IN_BRANCH)
    assert isinstance(found, list), found  # a list: the tool ran the kernel to its end
