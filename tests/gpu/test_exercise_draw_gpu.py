"""On a GPU the draw_actions exercise of 03_sampler runs in both languages: a right answer's
verdict is true, and a Numba running sum that the GPU makes float64 (started at 0.0 or at
float(0), right on the simulator) is rejected."""

import pytest
from exercise_answers import DRAW_CU, draw_from_float_zero, make_draw_kernel

import wd_teach
from wd_teach.exercises import lesson_03


def test_a_right_draw_runs_in_both_languages_and_its_verdict_is_true(capsys):
    assert "pycuda" in wd_teach.discover().backends, "these tests need PyCUDA on the GPU"
    verdict = lesson_03.check_draw_kernels(make_draw_kernel(), DRAW_CU, "pycuda")
    assert verdict and verdict.passed_here
    out = capsys.readouterr().out
    assert "All right" in out and "NOT" not in out


@pytest.mark.parametrize("backend", ["pycuda", "numba"])
def test_a_float64_running_sum_is_rejected_on_a_gpu(backend, capsys):
    verdict = lesson_03.check_draw_kernels(draw_from_float_zero, DRAW_CU, backend)
    assert not verdict and not verdict.passed_here
    out = capsys.readouterr().out
    # the float32 trap shows it in the run, or the compiled types do
    assert "agent 5 (a float32 running sum)" in out or "cumulative is a float64" in out
    assert "All right" not in out
