"""On a GPU the catch exercise of 06_tag runs in both languages, and the race is real: a
plain += loses counts that an atomic add keeps."""

import numpy as np
import pytest
from numba import cuda

import wd_teach
from wd_teach.exercises import lesson_06
from wd_teach.exercises.races import races
from wd_teach.numba_index import agent_id, env_id

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


def make_right_catch():
    @cuda.jit
    def catch_runners(loc_x, loc_y, in_game, num_caught, num_agents, num_taggers,
                      tagging_distance):
        env = env_id()
        agent = agent_id()
        if agent >= num_agents or agent < num_taggers or in_game[env, agent] == 0:
            return
        for tagger in range(num_taggers):
            dx = loc_x[env, tagger] - loc_x[env, agent]
            dy = loc_y[env, tagger] - loc_y[env, agent]
            if dx * dx + dy * dy <= tagging_distance * tagging_distance:
                in_game[env, agent] = 0
                cuda.atomic.add(num_caught, env, 1)
                return

    return catch_runners


right_catch = make_right_catch()


def test_a_right_catch_runs_in_both_languages_and_passes(capsys):
    assert "pycuda" in wd_teach.discover().backends, "these tests need PyCUDA on the GPU"
    assert lesson_06.check_catch(right_catch, CATCH_C, "pycuda")
    out = capsys.readouterr().out
    assert "CUDA C kernel: ran on pycuda" in out
    assert "Numba kernel: ran on numba (on the GPU)" in out
    assert "All right" in out and "NOT" not in out


@pytest.mark.parametrize("wrong, says", [
    (("atomicAdd(&num_caught[env], 1);", "num_caught[env] += 1;"), "adds were lost"),
    (("agent < num_taggers) return;", "agent < 0) return;"), "is a tagger"),
    (("if (in_game[me] == 0) return;", ""), "already out of the game"),
    (("<= tagging_distance", "< tagging_distance"), "exactly at it"),
    (("atomicAdd(&num_caught[env], 1);", "num_caught[env] = 1;"), "do not overwrite it"),
])
def test_wrong_cuda_c_catches_are_rejected_naming_what_is_wrong(wrong, says, capsys):
    old, new = wrong
    assert old in CATCH_C
    assert not lesson_06.check_catch(right_catch, CATCH_C.replace(old, new), "pycuda")
    out = capsys.readouterr().out
    assert "CUDA C kernel, " in out and says in out and "All right" not in out


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
            num_caught[env] += 1
            return


def test_a_numba_catch_with_a_plain_add_loses_counts_on_the_gpu(capsys):
    assert not lesson_06.check_catch(catch_runners, CATCH_C, "numba")
    out = capsys.readouterr().out
    assert "Numba kernel, " in out and "adds were lost" in out


@pytest.mark.parametrize("backend", ["pycuda", "numba"])
def test_a_plain_add_loses_updates_on_a_gpu_and_an_atomic_none(backend):
    lost = races.lost_updates(backend, [1, 32, 256], num_envs=500)
    assert np.array_equal(lost["count_atomic"], np.zeros(3))
    assert lost["count_plain"][0] == 0  # one thread alone cannot race
    assert lost["count_plain"][1] > 0.5  # a warp's threads read the same old value
