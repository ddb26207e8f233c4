"""A checker's verdict is true only when every part it checks ran here and was right.

Where the CUDA C half cannot run (no GPU, no PyCUDA: forced here by `without_pycuda`, so this
is tested on a GPU machine too), every two-language checker, given right answers in both
languages, returns a verdict that is not True: the notebook's `assert check(...)` fails on
it, `passed_here` holds, and its repr says what was not run. The same checkers with PyCUDA
running are the GPU twins' (tests/gpu/test_exercise_*_gpu.py).
"""

import pytest
from exercise_answers import (
    CATCH_C,
    DRAW_CU,
    MOVE_C_WITHOUT_DT_OR_GUARD,
    PARKING_CU,
    RESET_C,
    RIGHT_RESET,
    SPACING_CU,
    cuda_c_runs_on_the_cpu,
    make_catch,
    make_draw_kernel,
    make_parking_step,
    spacing_step,
    without_pycuda,
)

from wd_teach.exercises import lesson_02, lesson_03, lesson_04, lesson_05, lesson_06
from wd_teach.exercises.verdict import Verdict, not_yet, verdict_of
from wd_teach.lessons.demo import DEMO_CUDA_C
from wd_teach.lessons.demo import move as right_move

#: Every two-language checker, with right answers in both languages.
RIGHT_ANSWERS = {
    "02 move": (lesson_02.check_move_kernel, right_move, DEMO_CUDA_C),
    "03 draw_actions": (lesson_03.check_draw_kernels, make_draw_kernel(), DRAW_CU),
    "04 reset": (lesson_04.check_reset, RIGHT_RESET, RESET_C),
    "05 parking_step": (lesson_05.check_parking_step, make_parking_step(), PARKING_CU),
    "05 spacing_step": (lesson_05.check_spacing_step, spacing_step, SPACING_CU),
    "06 catch_runners": (lesson_06.check_catch, make_catch(), CATCH_C),
}


@pytest.mark.parametrize("check, numba_answer, cuda_c_answer", RIGHT_ANSWERS.values(),
                         ids=RIGHT_ANSWERS)
def test_no_checker_returns_true_when_the_cuda_c_half_did_not_run(
        check, numba_answer, cuda_c_answer, monkeypatch, capsys):
    without_pycuda(monkeypatch)
    verdict = check(numba_answer, cuda_c_answer, "numba")
    out = capsys.readouterr().out
    assert verdict is not True and not verdict
    assert verdict.passed_here, out
    assert "Checked only in part" in out and "All right" not in out
    assert "NOT run or not checked whole here: CUDA C kernel" in repr(verdict)
    with pytest.raises(AssertionError):
        assert verdict  # what a solution cell's bare `assert check(...)` does


def test_lesson_02s_move_without_dt_or_guard_is_not_passed_without_a_gpu(monkeypatch, capsys):
    """A learner's report: a right Numba kernel and a CUDA C move with no dt and no guard
    printed "Checked only in part" yet returned True. Now it is never true; on a machine with
    no GPU the CUDA C half runs on the CPU (wd_teach/exercises/host_c.py) and is found wrong,
    so the solution cell's assert there (`verdict.passed_here`) fails on it too."""
    without_pycuda(monkeypatch)
    verdict = lesson_02.check_move_kernel(right_move, MOVE_C_WITHOUT_DT_OR_GUARD, "numba")
    out = capsys.readouterr().out
    assert not verdict
    if not cuda_c_runs_on_the_cpu():  # a GPU without PyCUDA: the CUDA C is compiled only
        assert "Checked only in part" in out
    else:
        assert not verdict.passed_here, out
        assert "CUDA C kernel, run on the CPU" in out and "wrote past the end of pos" in out


@pytest.mark.skipif(not cuda_c_runs_on_the_cpu(),
                    reason="on a GPU the CUDA C half runs there; with no C++ compiler, nowhere")
def test_lesson_02s_cuda_c_runs_on_the_cpu_where_no_gpu_is(capsys):
    """Without a GPU the CUDA C half is run, not only compiled: a guarded move that forgets
    dt is found wrong by its numbers, and a right one is right there but still not a verdict
    on the whole (its threads never ran at once)."""
    no_dt = DEMO_CUDA_C.replace("vel[i] * dt", "vel[i]")
    assert no_dt != DEMO_CUDA_C
    verdict = lesson_02.check_move_kernel(right_move, no_dt, "numba")
    out = capsys.readouterr().out
    assert not verdict.passed_here and "positions are off" in out, out
    verdict = lesson_02.check_move_kernel(right_move, DEMO_CUDA_C, "numba")
    out = capsys.readouterr().out
    assert not verdict and verdict.passed_here, out
    assert dict(verdict.not_run).keys() == {"CUDA C kernel on a GPU"}
    assert "CUDA C kernel, run on the CPU: ran on cpu" in out and "All right" not in out


def test_a_verdict_is_true_only_when_every_part_ran_and_was_right():
    both = Verdict(right=("Numba kernel", "CUDA C kernel"))
    part = Verdict(right=("Numba kernel",), not_run=(("CUDA C kernel", "no GPU"),))
    wrong = Verdict(right=("CUDA C kernel",), wrong=("Numba kernel",))
    assert both and both.passed_here and repr(both).startswith("Verdict: all right")
    assert not part and part.passed_here and "checked only in part" in repr(part)
    assert not wrong and not wrong.passed_here and "not yet" in repr(wrong)
    assert not Verdict() and not Verdict().passed_here  # nothing checked: nothing vouched for
    unchecked = Verdict(not_run=(("Numba kernel", "no NVVM"), ("CUDA C kernel", "no GPU")))
    assert not unchecked and unchecked.passed_here  # what was looked at was not wrong
    assert not not_yet() and "not yet" in repr(not_yet())


def test_a_one_part_checker_returns_a_verdict_in_words():
    @verdict_of("your answer")
    def check(answer):
        return answer == 42

    assert check(42) and repr(check(42)) == "Verdict: all right (your answer)"
    assert not check(41) and "not yet" in repr(check(41))
