"""On a GPU the reset exercise of 04_reset_and_log runs in both languages: the CUDA C with
PyCUDA, the Numba on the device. Right resets pass; the usual wrong ones are rejected with
the array, env and agent that went wrong."""

import pytest
from numba import cuda

import wd_teach
from wd_teach.exercises import lesson_04
from wd_teach.numba_index import agent_id, env_id

RESET_C = r"""
#include "wd_teach.cuh"

extern "C" __global__ void reset_rows(float* data, const float* pristine, const int* done,
                                      int row_length) {
  const int env = wd_env_id();
  if (done[env] == 0) return;
  const long long row_start = (long long)env * row_length;
  for (int i = wd_agent_id(); i < row_length; i += gridDim.y * blockDim.x) {
    data[row_start + i] = pristine[row_start + i];
  }
}

extern "C" __global__ void clear_done(int* done) {
  if (wd_agent_id() == 0) done[wd_env_id()] = 0;
}
"""


@cuda.jit
def reset_rows(data, pristine, done, row_length):
    env = env_id()
    if done[env] == 0:
        return
    flat_data = data.reshape(data.size)
    flat_pristine = pristine.reshape(pristine.size)
    row_start = env * row_length
    for i in range(agent_id(), row_length, cuda.gridDim.y * cuda.blockDim.x):
        flat_data[row_start + i] = flat_pristine[row_start + i]


@cuda.jit
def clear_done(done):
    if agent_id() == 0:
        done[env_id()] = 0


def test_a_right_reset_runs_in_both_languages_and_passes(capsys):
    assert "pycuda" in wd_teach.discover().backends, "these tests need PyCUDA on the GPU"
    assert lesson_04.check_reset([reset_rows, clear_done], RESET_C, "pycuda")
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
    assert not lesson_04.check_reset([reset_rows, clear_done], RESET_C.replace(old, new),
                                     "pycuda")
    out = capsys.readouterr().out
    assert "CUDA C kernel, " in out and says in out and "All right" not in out
