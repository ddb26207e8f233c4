"""On a GPU the reset exercise of 04_reset_and_log runs in both languages: the CUDA C with
PyCUDA, the Numba on the device. Right resets pass; the usual wrong ones are rejected with
the array, env and agent that went wrong."""

import pytest
from exercise_answers import RESET_C, RIGHT_RESET

import wd_teach
from wd_teach.exercises import lesson_04


def test_a_right_reset_runs_in_both_languages_and_passes(capsys):
    assert "pycuda" in wd_teach.discover().backends, "these tests need PyCUDA on the GPU"
    verdict = lesson_04.check_reset(RIGHT_RESET, RESET_C, "pycuda")
    assert verdict and verdict.passed_here
    out = capsys.readouterr().out
    assert "CUDA C kernel: ran on pycuda" in out
    assert "Numba kernel: ran on numba (on the GPU)" in out
    assert "All right" in out and "NOT" not in out


@pytest.mark.parametrize("wrong, says", [
    (("if (done[env] == 0) return;", ""), "is not done, but its row changed"),
    (("i += gridDim.y * blockDim.x", "i += row_length"), "were not restored"),
    (("= pristine[row_start + i]", "= pristine[i]"), "copied from env 0's pristine row"),
    (("data[row_start + i] = pristine[row_start + i];\n  }",
      # done is const in reset_rows: lowering the flag there takes a cast
      "data[row_start + i] = pristine[row_start + i];\n  }\n  ((int*)done)[env] = 0;"),
     "reset_rows changed env"),
    (("if (wd_agent_id() == 0) done[wd_env_id()] = 0;", "return;"), "done flag is still 1"),
])
def test_wrong_cuda_c_resets_are_rejected_naming_what_is_wrong(wrong, says, capsys):
    old, new = wrong
    assert old in RESET_C
    assert not lesson_04.check_reset(RIGHT_RESET, RESET_C.replace(old, new),
                                     "pycuda")
    out = capsys.readouterr().out
    assert "CUDA C kernel, " in out and says in out and "All right" not in out
