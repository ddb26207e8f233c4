"""The answers the exercise checkers of 04_reset_and_log and 06_tag are tested with: the
right ones and the known-wrong ones, CUDA C sources and Numba kernels, written once here and
imported by the CPU tests (tests/test_exercise_*.py) and their GPU twins
(tests/gpu/test_exercise_*_gpu.py) alike.

A `make_*` function builds the right Numba kernel, or, with one flag turned off, the same
kernel with a single thing wrong; a wrong CUDA C answer is the right source with one line
replaced, in the test that feeds it.
"""

from types import SimpleNamespace

from numba import cuda

import wd_teach
from wd_teach.exercises import cuda_c_check
from wd_teach.numba_index import agent_id, env_id


def without_pycuda(monkeypatch) -> None:
    """Make the checkers see this machine without PyCUDA, as on a machine where it cannot
    run, so that their no-GPU path is tested on a GPU machine too."""
    here = wd_teach.discover()
    report = SimpleNamespace(has_gpu=here.has_gpu,
                             backends=tuple(b for b in here.backends if b != "pycuda"))
    monkeypatch.setattr(cuda_c_check, "discover", lambda: report)


# -- 04_reset_and_log: reset_rows and clear_done ----------------------------------------------

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


def make_reset_rows(check_done=True, stride=True, own_row=True, lowers_flag=False):
    """The right Numba reset_rows, or one with a single thing wrong."""

    @cuda.jit
    def reset_rows(data, pristine, done, row_length):
        env = env_id()
        if check_done and done[env] == 0:
            return
        flat_data = data.reshape(data.size)
        flat_pristine = pristine.reshape(pristine.size)
        row_start = env * row_length
        source_start = row_start if own_row else 0
        step = cuda.gridDim.y * cuda.blockDim.x if stride else row_length
        for i in range(agent_id(), row_length, step):
            flat_data[row_start + i] = flat_pristine[source_start + i]
        if lowers_flag and agent_id() == 0:
            done[env] = 0

    return reset_rows


@cuda.jit
def clear_done(done):
    if agent_id() == 0:
        done[env_id()] = 0


@cuda.jit
def keeps_the_flags(done):  # named clear_done below
    """A wrong answer on purpose: it forgets to lower the done flags."""


keeps_the_flags.py_func.__name__ = "clear_done"


@cuda.jit
def resets_nothing(data, pristine, done, row_length):  # named reset_rows below
    """A wrong answer on purpose: it copies no pristine row back."""


resets_nothing.py_func.__name__ = "reset_rows"

RIGHT_RESET = [make_reset_rows(), clear_done]


# -- 06_tag: catch_runners, counted with an atomic -------------------------------------------

CATCH_C = r"""
#include "wd_teach.cuh"

extern "C" __global__ void catch_runners(const float* loc_x, const float* loc_y, int* in_game,
                                         int* num_caught, int num_agents, int num_taggers,
                                         float tagging_distance) {
  const int env = wd_env_id();
  const int agent = wd_agent_id();
  if (agent >= num_agents || agent < num_taggers) return;
  const int me = wd_slot(env, agent, num_agents);
  if (in_game[me] == 0) return;
  for (int tagger = 0; tagger < num_taggers; ++tagger) {
    const int t = wd_slot(env, tagger, num_agents);
    const float dx = loc_x[t] - loc_x[me];
    const float dy = loc_y[t] - loc_y[me];
    if (dx * dx + dy * dy <= tagging_distance * tagging_distance) {
      in_game[me] = 0;
      atomicAdd(&num_caught[env], 1);
      return;
    }
  }
}
"""


def make_catch(runners_only=True, playing_only=True, at_distance=True, adds=True):
    """The right Numba catch_runners, or one with a single thing wrong."""

    @cuda.jit
    def catch_runners(loc_x, loc_y, in_game, num_caught, num_agents, num_taggers,
                      tagging_distance):
        env = env_id()
        agent = agent_id()
        if agent >= num_agents or (runners_only and agent < num_taggers):
            return
        if playing_only and in_game[env, agent] == 0:
            return
        reach2 = tagging_distance * tagging_distance
        for tagger in range(num_taggers):
            dx = loc_x[env, tagger] - loc_x[env, agent]
            dy = loc_y[env, tagger] - loc_y[env, agent]
            d2 = dx * dx + dy * dy
            if d2 < reach2 or (at_distance and d2 == reach2):
                in_game[env, agent] = 0
                if adds:
                    cuda.atomic.add(num_caught, env, 1)
                else:
                    num_caught[env] = 1
                return

    return catch_runners


@cuda.jit
def catch_runners(loc_x, loc_y, in_game, num_caught, num_agents, num_taggers, tagging_distance):
    """Right, but for its count: a plain += where an atomic add belongs."""
    env = env_id()
    agent = agent_id()
    if agent >= num_agents or agent < num_taggers or in_game[env, agent] == 0:
        return
    for tagger in range(num_taggers):
        dx = loc_x[env, tagger] - loc_x[env, agent]
        dy = loc_y[env, tagger] - loc_y[env, agent]
        if dx * dx + dy * dy <= tagging_distance * tagging_distance:
            in_game[env, agent] = 0
            num_caught[env] += 1  # a plain +=: threads of the same env race
            return


plain_count = catch_runners


@cuda.jit
def catches_nothing(loc_x, loc_y, in_game, num_caught, num_agents, num_taggers,
                    tagging_distance):  # named catch_runners below
    """A wrong answer on purpose: it tags no runner."""


catches_nothing.py_func.__name__ = "catch_runners"
