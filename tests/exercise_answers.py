"""The answers the two-language exercise checkers (02 to 06) are tested with: the right ones
and the known-wrong ones, CUDA C sources and Numba kernels, written once here and imported by
the CPU tests (tests/test_exercise*.py) and their GPU twins (tests/gpu/test_exercise_*_gpu.py)
alike.

A `make_*` function builds the right Numba kernel, or, with one flag turned off, the same
kernel with a single thing wrong; a wrong CUDA C answer is mostly the right source with one
line replaced, in the test that feeds it. The wrong answers that learners gave and that a
checker once took for right have names of their own here, in both languages.
"""

from types import SimpleNamespace

import numpy as np
from numba import cuda

import wd_teach
from wd_teach.exercises import cuda_c_check, host_c
from wd_teach.lessons.demo import DEMO_CUDA_C
from wd_teach.numba_index import agent_id, env_id


def without_pycuda(monkeypatch) -> None:
    """Make the checkers see this machine without PyCUDA, as on a machine where it cannot
    run, so that their no-GPU path is tested on a GPU machine too."""
    here = wd_teach.discover()
    report = SimpleNamespace(has_gpu=here.has_gpu,
                             backends=tuple(b for b in here.backends if b != "pycuda"))
    monkeypatch.setattr(cuda_c_check, "discover", lambda: report)


def cuda_c_runs_on_the_cpu() -> bool:
    """Whether the checkers run CUDA C on the CPU here: no GPU, and a C++ compiler."""
    return not wd_teach.discover().has_gpu and host_c.compiler() is not None


def says_the_cuda_c_did_not_run_on_a_gpu(out: str) -> bool:
    """What a checker prints for a right CUDA C half it could not run on a GPU: where no GPU
    is, that it ran on the CPU (wd_teach/exercises/host_c.py) and still awaits a GPU; where a
    GPU is without PyCUDA (or no C++ compiler), that what it computes was not checked."""
    if not cuda_c_runs_on_the_cpu():
        return "NOT checked: what the CUDA C kernel computes, since it was not run" in out
    return ("CUDA C kernel, run on the CPU" in out
            and "NOT checked: the CUDA C kernel on a GPU" in out)


def right_where_it_ran(verdict) -> bool:
    """What a right answer's verdict must be: every half that ran was right, and the verdict
    as a whole is true exactly where both halves ran (PyCUDA here)."""
    both_ran = "pycuda" in cuda_c_check.discover().backends
    return verdict.passed_here and bool(verdict) == both_ran


# -- 02_kernel_launch: move -------------------------------------------------------------------

#: Known wrong: moves by vel alone (no dt) and lets the spare threads write past the agents.
#: It compiles; without a GPU it cannot run, and the verdict must not be True.
MOVE_C_WITHOUT_DT_OR_GUARD = (DEMO_CUDA_C.replace("  if (agent >= num_agents) return;\n", "")
                              .replace("pos[i] += vel[i] * dt;", "pos[i] += vel[i];"))
#: Known wrong, and only in its guard: right numbers, but the spare threads write past the
#: agents (on a GPU that write lands past the array; the fenced launch shows it).
MOVE_C_WITHOUT_GUARD = DEMO_CUDA_C.replace("  if (agent >= num_agents) return;\n", "")


# -- 03_sampler: draw_actions -----------------------------------------------------------------

DRAW_CU = r"""
#include "wd_teach.cuh"

extern "C" __global__ void draw_actions(const float* probs, const float* u, int* actions,
                                        int num_actions, int num_agents) {
  const int env = wd_env_id();
  const int agent = wd_agent_id();
  if (agent >= num_agents) return;
  const int slot = wd_slot(env, agent, num_agents);
  const float* row = probs + slot * num_actions;
  int action = -1;
  float cumulative = 0.0f;
  int last_possible = 0;
  for (int a = 0; a < num_actions && action < 0; ++a) {
    if (row[a] > 0.0f) last_possible = a;
    cumulative += row[a];
    if (u[slot] < cumulative) action = a;
  }
  actions[slot] = action < 0 ? last_possible : action;
}
"""


def make_draw_kernel(total=np.float32, at_or_below=False, last_fallback=False, write=True,
                     env_of_row=-1):
    """The right Numba kernel, or one with the given mistakes: a running sum of another type,
    u <= sum, the last action past the end, no write, every env reading the rows of
    env `env_of_row` (-1: its own)."""

    @cuda.jit
    def draw_actions(probs, u, actions, num_actions, num_agents):
        env = env_id()
        agent = agent_id()
        if agent >= num_agents:
            return
        row = probs[env if env_of_row < 0 else env_of_row, agent]
        cumulative = total(0.0)
        last_possible = 0
        action = -1
        for a in range(num_actions):
            if action < 0:
                if row[a] > 0:
                    last_possible = a
                cumulative += row[a]
                if u[env, agent] < cumulative or (at_or_below and u[env, agent] == cumulative):
                    action = a
        if action < 0:
            action = num_actions - 1 if last_fallback else last_possible
        if write:
            actions[env, agent] = action

    return draw_actions


@cuda.jit
def draw_from_float_zero(probs, u, actions, num_actions, num_agents):
    """Known wrong: the running sum starts at float(0), a float64 on a GPU (the simulator
    keeps it float32, by NumPy's rules, so every draw there is right)."""
    env = env_id()
    agent = agent_id()
    if agent >= num_agents:
        return
    row = probs[env, agent]
    cumulative = float(0)
    last_possible = 0
    action = -1
    for a in range(num_actions):
        if action < 0:
            if row[a] > 0:
                last_possible = a
            cumulative += row[a]
            if u[env, agent] < cumulative:
                action = a
    actions[env, agent] = action if action >= 0 else last_possible


draw_from_float_zero.py_func.__name__ = "draw_actions"


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


# -- 05_custom_env: parking_step, the parking line ---------------------------------------------

PARKING_CU = r"""
#include "wd_teach.cuh"

extern "C" __global__ void parking_step(float* pos, const float* goal, int* parked,
                                        const float* moves, const int* actions, float* obs,
                                        float* rewards, int* done, int* timestep,
                                        int episode_length, float length, float reach,
                                        float arrival_bonus, int num_agents) {
  const int env = wd_env_id();
  const int agent = wd_agent_id();
  if (agent >= num_agents) return;
  const int i = wd_slot(env, agent, num_agents);
  if (agent == 0) {
    const int t = timestep[env] + 1;
    timestep[env] = t;
    done[env] = t >= episode_length;
  }
  if (parked[i] == 0) {
    pos[i] = fminf(fmaxf(pos[i] + moves[actions[i]], 0.0f), length);
    const float distance = fabsf(goal[env] - pos[i]);
    float reward = -distance / length;
    if (distance <= reach) {
      parked[i] = 1;
      reward = reward + arrival_bonus;
    }
    rewards[i] = reward;
  } else {
    rewards[i] = 0.0f;
  }
  obs[i * 3 + 0] = pos[i] / length;
  obs[i * 3 + 1] = (goal[env] - pos[i]) / length;
  obs[i * 3 + 2] = parked[i];
}
"""


def make_parking_step(bonus=True, park_stays=True, parked_feature=True, guard=True):
    """The right Numba kernel, or one with a single thing wrong."""

    @cuda.jit
    def parking_step(pos, goal, parked, moves, actions, obs, rewards, done, timestep,
                     episode_length, length, reach, arrival_bonus, num_agents):
        env = env_id()
        agent = agent_id()
        if guard and agent >= num_agents:
            return
        i = (env, agent)
        if agent == 0:
            t = timestep[env] + 1
            timestep[env] = t
            done[env] = t >= episode_length
        if parked[i] == 0 or not park_stays:
            pos[i] = min(max(pos[i] + moves[actions[i]], np.float32(0.0)), length)
            distance = abs(goal[env] - pos[i])
            reward = -distance / length
            if distance <= reach:
                parked[i] = 1
                if bonus:
                    reward = reward + arrival_bonus
            rewards[i] = reward
        else:
            rewards[i] = np.float32(0.0)
        obs[env, agent, 0] = pos[i] / length
        obs[env, agent, 1] = (goal[env] - pos[i]) / length
        obs[env, agent, 2] = np.float32(parked[i]) if parked_feature else np.float32(0.0)

    return parking_step


# -- 05_custom_env: spacing_step, agents that read each other after a barrier -----------------

SPACING_CU = r"""
#include "wd_teach.cuh"

extern "C" __global__ void spacing_step(float* pos, const float* moves, const int* actions,
                                        float* obs, float* rewards, int* done, int* timestep,
                                        int episode_length, float length, float spacing,
                                        int num_agents) {
  const int env = wd_env_id();
  const int agent = wd_agent_id();
  const bool active = agent < num_agents;
  const int i = wd_slot(env, agent, num_agents);
  if (active) {
    pos[i] = fminf(fmaxf(pos[i] + moves[actions[i]], 0.0f), length);
  }
  __syncthreads();
  if (active) {
    int nearest = -1;
    for (int other = 0; other < num_agents; other++) {
      const int j = wd_slot(env, other, num_agents);
      if (other != agent &&
          (nearest < 0 || fabsf(pos[j] - pos[i]) < fabsf(pos[nearest] - pos[i]))) {
        nearest = j;
      }
    }
    const float offset = pos[nearest] - pos[i];
    rewards[i] = -fabsf(fabsf(offset) - spacing) / length;
    obs[i * 2 + 0] = pos[i] / length;
    obs[i * 2 + 1] = offset / length;
  }
  if (agent == 0) {
    const int t = timestep[env] + 1;
    timestep[env] = t;
    done[env] = t >= episode_length;
  }
}
"""


@cuda.jit
def spacing_step(pos, moves, actions, obs, rewards, done, timestep, episode_length, length,
                 spacing, num_agents):
    env = env_id()
    agent = agent_id()
    active = agent < num_agents
    i = (env, agent)
    if active:
        pos[i] = min(max(pos[i] + moves[actions[i]], np.float32(0.0)), length)
    cuda.syncthreads()
    if active:
        nearest = -1
        for other in range(num_agents):
            if other != agent and (nearest < 0 or abs(pos[env, other] - pos[i])
                                   < abs(pos[env, nearest] - pos[i])):
                nearest = other
        offset = pos[env, nearest] - pos[i]
        rewards[i] = -abs(abs(offset) - spacing) / length
        obs[env, agent, 0] = pos[i] / length
        obs[env, agent, 1] = offset / length
    if agent == 0:
        t = timestep[env] + 1
        timestep[env] = t
        done[env] = t >= episode_length


def make_barrier_in_branch():
    """Known wrong: the barrier inside `if agent < num_agents:`, where spare threads (a block
    larger than the agents) never reach it. At the lesson's launch (one thread per agent) it
    computes right, everywhere."""

    @cuda.jit
    def spacing_step(pos, moves, actions, obs, rewards, done, timestep, episode_length, length,
                     spacing, num_agents):
        env = env_id()
        agent = agent_id()
        if agent < num_agents:
            i = (env, agent)
            pos[i] = min(max(pos[i] + moves[actions[i]], np.float32(0.0)), length)
            cuda.syncthreads()  # the spare threads of the block never get here
            nearest = -1
            for other in range(num_agents):
                if other != agent and (nearest < 0 or abs(pos[env, other] - pos[i])
                                       < abs(pos[env, nearest] - pos[i])):
                    nearest = other
            offset = pos[env, nearest] - pos[i]
            rewards[i] = -abs(abs(offset) - spacing) / length
            obs[env, agent, 0] = pos[i] / length
            obs[env, agent, 1] = offset / length
            if agent == 0:
                t = timestep[env] + 1
                timestep[env] = t
                done[env] = t >= episode_length

    return spacing_step


#: The same in CUDA C: the barrier inside `if (active) { ... }`.
SPACING_C_BARRIER_IN_BRANCH = SPACING_CU.replace(
    "  }\n  __syncthreads();\n  if (active) {\n", "    __syncthreads();\n")


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


@cuda.jit
def exchange_on_in_game(loc_x, loc_y, in_game, num_caught, num_agents, num_taggers,
                        tagging_distance):  # named catch_runners below
    """Known wrong: the atomic on the wrong array (an exchange on in_game) and a plain += on
    the counter. On the simulator every count is right; on a GPU adds are lost."""
    env = env_id()
    agent = agent_id()
    if agent >= num_agents or agent < num_taggers or in_game[env, agent] == 0:
        return
    for tagger in range(num_taggers):
        dx = loc_x[env, tagger] - loc_x[env, agent]
        dy = loc_y[env, tagger] - loc_y[env, agent]
        if dx * dx + dy * dy <= tagging_distance * tagging_distance:
            cuda.atomic.exch(in_game, (env, agent), 0)
            num_caught[env] += 1  # a plain +=: threads of the same env race
            return


exchange_on_in_game.py_func.__name__ = "catch_runners"

#: The same in CUDA C.
CATCH_C_EXCHANGE_ON_IN_GAME = CATCH_C.replace(
    "      in_game[me] = 0;\n      atomicAdd(&num_caught[env], 1);",
    "      atomicExch(&in_game[me], 0);\n      num_caught[env] += 1;")
