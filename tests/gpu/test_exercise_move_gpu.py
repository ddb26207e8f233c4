"""On a GPU the move exercise of 02_kernel_launch runs in both languages: a right answer's
verdict is true, and the CUDA C move that only compiles without a GPU (no dt, no guard) is
run and rejected."""

from exercise_answers import MOVE_C_WITHOUT_DT_OR_GUARD

import wd_teach
from wd_teach.exercises import lesson_02
from wd_teach.lessons.demo import DEMO_CUDA_C
from wd_teach.lessons.demo import move as right_move


def test_a_right_move_runs_in_both_languages_and_its_verdict_is_true(capsys):
    assert "pycuda" in wd_teach.discover().backends, "these tests need PyCUDA on the GPU"
    verdict = lesson_02.check_move_kernel(right_move, DEMO_CUDA_C, "pycuda")
    assert verdict is not True and verdict and verdict.passed_here
    out = capsys.readouterr().out
    assert "CUDA C kernel: ran on pycuda" in out and "All right" in out and "NOT" not in out


def test_a_cuda_c_move_without_dt_or_guard_is_run_and_rejected(capsys):
    verdict = lesson_02.check_move_kernel(right_move, MOVE_C_WITHOUT_DT_OR_GUARD, "pycuda")
    assert not verdict and not verdict.passed_here
    out = capsys.readouterr().out
    assert "CUDA C kernel" in out and "All right" not in out
