"""The checker of 04_reset_and_log's exercise (the reset in Numba and in CUDA C) says yes to
a right reset and no, naming what is wrong, to the usual wrong ones; and where the CUDA C
cannot run it never says "All right".

The Numba kernels run here (the simulator, or a GPU). The CUDA C ones run only with PyCUDA
on a GPU (tests/gpu/test_exercise_reset_gpu.py); here they meet the no-GPU path (forced by
`no_pycuda`, so it is tested on a GPU machine too): named kernels with bodies, parameters
bound against the store, compiled where nvcc is. The answers, right and wrong, are
tests/exercise_answers.py's, shared with the GPU twin.
"""

import pytest
from exercise_answers import (
    RESET_C,
    RIGHT_RESET,
    clear_done,
    keeps_the_flags,
    make_reset_rows,
    resets_nothing,
    right_where_it_ran,
    says_the_cuda_c_did_not_run_on_a_gpu,
    without_pycuda,
)

import wd_teach
from wd_teach.device import nvcc_path
from wd_teach.exercises import lesson_04


@pytest.fixture
def no_pycuda(monkeypatch):
    """The checker as it runs on a machine where PyCUDA cannot run, on any machine."""
    without_pycuda(monkeypatch)


def test_the_checker_accepts_a_right_reset(capsys):
    assert right_where_it_ran(lesson_04.check_reset(RIGHT_RESET, RESET_C, "numba"))
    out = capsys.readouterr().out
    assert "Numba kernel: ran on numba" in out and ": right." in out
    if "pycuda" in wd_teach.discover().backends:
        assert "CUDA C kernel: ran on pycuda" in out and "All right" in out
    else:
        assert "NOT checked" in out and "All right" not in out


@pytest.mark.parametrize("kernels, says", [
    ([make_reset_rows(check_done=False), clear_done],
     ["is not done, but its row changed", "Return early when done[env] == 0"]),
    ([make_reset_rows(stride=False), clear_done],
     ["is done, but", "were not restored", "agent ", "stride over the row"]),
    ([make_reset_rows(own_row=False), clear_done],
     ["copied from env 0's pristine row", "e * row_length"]),
    ([make_reset_rows(lowers_flag=True), clear_done],
     ["reset_rows changed env", "done flag", "clear_done, a launch of its own"]),
    ([make_reset_rows(), keeps_the_flags], ["after clear_done", "done flag is still 1"]),
    ([resets_nothing, clear_done], ["Not yet: reset_rows changed nothing"]),
    ([make_reset_rows()], ["no kernel named clear_done"]),
    (make_reset_rows(), ["Not yet: pass [reset_rows, clear_done]"]),
    (None, ["Not yet"]),
])
def test_the_checker_rejects_wrong_numba_resets_naming_what_is_wrong(kernels, says, capsys):
    assert not lesson_04.check_reset(kernels, RESET_C, "numba")
    out = capsys.readouterr().out
    assert "All right" not in out
    for piece in says:
        assert piece in out


def test_wrong_rows_are_named_by_array_env_and_agent(capsys):
    assert not lesson_04.check_reset([make_reset_rows(stride=False), clear_done], RESET_C,
                                     "numba")
    out = capsys.readouterr().out
    assert "array 'vel'" in out or "array 'pos'" in out
    assert "env " in out and "agent " in out


def test_without_pycuda_a_right_cuda_c_reset_is_reported_as_not_run(no_pycuda, capsys):
    verdict = lesson_04.check_reset(RIGHT_RESET, RESET_C, "numba")
    assert not verdict and verdict.passed_here
    out = capsys.readouterr().out
    assert "All right" not in out
    assert says_the_cuda_c_did_not_run_on_a_gpu(out), out


@pytest.mark.parametrize("source, says", [
    (RESET_C.replace("clear_done", "clear_flags"), "no kernel named clear_done"),
    (RESET_C.replace("float* data", "int* data"), "'data' holds float32"),
    (RESET_C.replace("int row_length)", "int row_length, int num_rows)"),
     "needs 'num_rows', but the store has no array or constant"),
    (RESET_C.replace("return;\n  const", "return\n  const"), "could not compile"),
    (RESET_C.replace("done[wd_env_id()] = 0;", "").replace("if (wd_agent_id() == 0)", ""),
     "the body of clear_done is empty"),
    (None, "Not yet"),
])
def test_without_pycuda_wrong_cuda_c_is_rejected_before_it_could_run(no_pycuda, source, says,
                                                                      capsys):
    if says == "could not compile" and nvcc_path() is None:
        pytest.skip("a compile error needs nvcc to be found, and nvcc is not on this machine")
    assert not lesson_04.check_reset(RIGHT_RESET, source, "numba")
    out = capsys.readouterr().out
    assert says in out and "All right" not in out
