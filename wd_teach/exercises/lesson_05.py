"""Checkers for 05_custom_env: the parking line's step, and the spacing step whose agents
read each other, each written twice (Numba and CUDA C).

The notebook builds the goal line from scratch: particles on a line, each steered left, not
at all, or right toward its environment's goal. The exercise changes one rule: a particle
that ends a step within `reach` of the goal parks there. It gets `arrival_bonus` on top of
that step's reward, then stays put with reward 0 for the rest of the episode, and its
observation gains a third feature, `parked`.

This module holds that env with its NumPy reference step (`parking_reference`). The learner
writes the step as a Numba kernel and as CUDA C; the checker runs each half that this
machine can run beside the reference through `check_consistency`, once with one block per
environment and once with each environment split over two blocks, and points at the first
array that parts. Where PyCUDA cannot run, the CUDA C half is compiled with nvcc and its
parameters are checked against the store, but it is not run: the verdict says so, and keeps
"All right" for a machine where both halves ran.

The second exercise, `check_spacing_step`, is the step of agents that read each other: each
agent moves, then finds its nearest neighbour among the moved agents. Between the two
halves the kernel must wait at a barrier that every thread of the block reaches. A missing
barrier shows up as a run that parts from the reference (on the simulator the threads of a
block run one after another, so it always does); a barrier that spare threads never reach (a
`return` before it, or the barrier inside `if agent < num_agents:`) does not, so on the
simulator the checker launches the step with a block larger than the agents and counts the
barriers each thread reached (barriers.py). On a GPU, where such a launch could hang, the code
is read for it instead and the kernel is not launched; CUDA C that reads right and runs right
is launched once more under compute-sanitizer's synccheck, where the tool is here. (Synccheck
flags threads of a block that meet different barriers; it did not flag, on an H200, a barrier
that spare threads skip altogether, so the code reading is what refuses that answer.)
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from functools import partial

import numpy as np
from gymnasium import spaces

from wd_teach import backends, cuda_c
from wd_teach._simulator import simulator_on
from wd_teach.env import OBS, Env, EpisodeMetric, StateArray, Tolerance, require
from wd_teach.env.consistency import check_consistency
from wd_teach.env.wrapper import EnvWrapper
from wd_teach.errors import WdTeachError
from wd_teach.exercises.barriers import (
    NO_BARRIER,
    UNREACHED,
    barrier_problems,
    counting_barriers,
    cuda_c_barrier_problems,
    numba_barrier_problems,
    synccheck,
)
from wd_teach.exercises.cuda_c_check import (
    CRASH_HINT,
    LABEL,
    check_halves,
    compile_only,
    run_learner_code,
    say_why_it_failed,
)
from wd_teach.exercises.fence import spare_threads_stay_inside
from wd_teach.exercises.gather.env import Gather, GatherConfig
from wd_teach.exercises.verdict import Verdict, not_yet
from wd_teach.launch import MAX_THREADS_PER_BLOCK
from wd_teach.lessons.sizes import lesson_sizes

PARAMETERS = ("pos, goal, parked, moves, actions, obs, rewards, done, timestep, "
              "episode_length, length, reach, arrival_bonus, num_agents")
#: What to look at when an array is the first to part from the reference.
HINTS = {
    "pos": "a particle that is not parked moves to pos + moves[action], kept within "
           "[0, length]; a parked one stays where it is.",
    "parked": "a particle parks (parked = 1) when, after its move, |goal - pos| <= reach.",
    "rewards": "a moving particle gets -|goal - pos| / length after its move, plus "
               "arrival_bonus in the step it parks; a particle parked before this step gets 0.",
    "obs": "obs[env, agent] is [pos / length, (goal - pos) / length, parked], after the move.",
    "timestep": "one thread per environment (agent 0) counts the step: timestep += 1.",
    "done": "agent 0 sets done = timestep >= episode_length (after counting the step).",
    "done (returned)": "agent 0 sets done = timestep >= episode_length (after counting the "
                       "step).",
}


@dataclass(frozen=True)
class LineConfig:
    num_particles: int = 4
    episode_length: int = 8
    length: float = 10.0
    step_size: float = 1.0
    reach: float = 0.75
    arrival_bonus: float = 1.0

    def validate(self) -> None:
        require(self.num_particles >= 1, "num_particles must be at least 1.")
        require(self.episode_length >= 1, "episode_length must be at least 1.")
        require(self.length > 0 and self.step_size > 0, "length and step_size must be "
                                                        "positive.")
        require(self.reach >= 0, "reach must be >= 0.")


def parking_reference(pos, goal, parked, moves, actions, obs, rewards, done, timestep,
                      episode_length, length, reach, arrival_bonus):
    """The parking line's step in NumPy, all environments at once: what the kernels must
    do, rounding for rounding."""
    moving = parked == 0
    moved = np.minimum(np.maximum(pos + moves[actions], np.float32(0)), length)
    pos[moving] = moved[moving]
    distance = np.abs(goal[:, None] - pos)
    arrived = moving & (distance <= reach)
    rewards[...] = np.where(moving, -distance / length, np.float32(0))
    rewards[arrived] += arrival_bonus
    parked[arrived] = 1
    timestep += 1
    done[:] = timestep >= episode_length
    observe(pos, goal, parked, length, obs)


def observe(pos, goal, parked, length, obs):
    obs[..., 0] = pos / length
    obs[..., 1] = (goal[:, None] - pos) / length
    obs[..., 2] = parked


class ParkingLine(Env):
    """The parking line, with the learner's kernels as its steps."""

    Config = LineConfig
    step_kernels = ("parking_step",)
    tolerance = Tolerance(atol=1e-6, why="one add, one abs and one divide per value: every "
                                         "backend rounds alike")

    def __init__(self, numba_kernel=None, cuda_c_source=None, config=None, **changes):
        super().__init__(config, **changes)
        self._numba_kernel = numba_kernel
        self._cuda_c_source = cuda_c_source

    @property
    def num_agents(self) -> int:
        return self.config.num_particles

    @property
    def observation_space(self) -> spaces.Box:
        return spaces.Box(-1.0, 1.0, shape=(3,), dtype=np.float32)

    @property
    def action_space(self) -> spaces.Discrete:
        return spaces.Discrete(3)  # left, stay, right

    def initial_state(self, num_envs, rng):
        c = self.config
        pos = rng.uniform(0, c.length, (num_envs, c.num_particles)).astype(np.float32)
        goal = rng.uniform(0, c.length, num_envs).astype(np.float32)
        parked = np.zeros((num_envs, c.num_particles), np.int32)
        obs = np.zeros((num_envs, c.num_particles, 3), np.float32)
        observe(pos, goal, parked, np.float32(c.length), obs)
        moves = np.array([-c.step_size, 0.0, c.step_size], np.float32)
        return {"pos": StateArray(pos), "goal": StateArray(goal, per="env"),
                "parked": StateArray(parked),
                "moves": StateArray(moves, per="shared", reset=False), OBS: StateArray(obs)}

    def constants(self):
        c = self.config
        return {"length": float(c.length), "reach": float(c.reach),
                "arrival_bonus": float(c.arrival_bonus)}

    def numba_kernels(self):
        return [self._numba_kernel]

    def cuda_sources(self):
        return [self._cuda_c_source]

    def reference_step(self):
        return parking_reference


def check_parking_step(numba_kernel, cuda_c_source, backend: str | None = None) -> Verdict:
    """Check both halves of the exercise; `backend` is the one the notebook runs on. The
    Verdict is true only when both ran and were right (the last line says what was not
    run)."""
    if numba_kernel is None or cuda_c_source is None:
        print("Not yet: write both the Numba kernel and the CUDA C source of parking_step.")
        return not_yet()
    return check_halves(
        backend,
        lambda half, label: _run_beside_reference(numba_kernel, cuda_c_source, half, label),
        lambda: compile_only(cuda_c_source, EnvWrapper(ParkingLine(), 1, "numpy").store,
                             f"the parameters are {PARAMETERS}.", name="parking_step"),
        "the particles park, in every environment, on every step, in both languages.",
        on_the_cpu=True)


def _run_beside_reference(numba_kernel, cuda_c_source, backend: str, label: str) -> bool:
    sizes = lesson_sizes()
    env = ParkingLine(numba_kernel, cuda_c_source, num_particles=sizes.num_agents,
                      episode_length=max(4, sizes.episode_length), length=5.0)
    steps = env.episode_length + 2  # past the end of an episode and into the next
    split = max(1, env.num_agents // 2 + 1)
    # First, the guard. On a GPU a kernel without it can still give right numbers (see
    # wd_teach.exercises.fence), or part from the reference where the stray writes land and
    # point at the wrong mistake: one step, two blocks per environment, a fence after each array.
    (kernels, _), = backends.get(backend).env_kernels(env)
    if not spare_threads_stay_inside(
            EnvWrapper(env, sizes.num_envs, "numpy").store, backend, kernels,
            f"{label}, two blocks per environment, fenced",
            f"the parameters are {PARAMETERS}, named as in the store.", max_threads=split,
            names=("parking_step",), guard_hint=CRASH_HINT):
        return False
    for max_threads, shape in ((MAX_THREADS_PER_BLOCK, "one block per environment"),
                               (split, "two blocks per environment")):
        report = run_learner_code(
            partial(check_consistency, env, ["numpy", backend], num_envs=sizes.num_envs,
                    steps=steps, max_threads=max_threads),
            f"{label}, {shape}", f"the parameters are {PARAMETERS}, named as in the store.")
        if report is None:
            return False
        found = report.divergence[backend]
        if found is not None:
            print(f"{label}, {shape}: first divergence from the NumPy reference at {found}.")
            print(f"Hint: {HINTS.get(found.array, 'compare with parking_reference.')}")
            return False
    print(f"{label}: ran on {backend} beside the NumPy reference for {steps} steps, with one "
          "and with two blocks per environment: they agree at every step, and no thread "
          "wrote past the end of an array.")
    return True


# -- the second exercise: keep your distance (agents that read each other) -------------------

SPACING_PARAMETERS = ("pos, moves, actions, obs, rewards, done, timestep, episode_length, "
                      "length, spacing, num_agents")
#: Seconds a run of the learner's kernel may take before the checker gives up on it.
TIME_LIMIT = 120
#: Threads in a warp: the barrier check's block is the next whole warp above the agents.
WARP = 32
SPACING_HINTS = {
    "pos": "first every agent moves: pos + moves[action], kept within [0, length].",
    "obs": "obs[env, agent] is [pos / length, (pos[nearest] - pos) / length], where nearest "
           "is another agent (never itself) with the smallest |pos[other] - pos|, the first "
           "in index order on a tie, all read after the move.",
    "rewards": "rewards = -| |pos[nearest] - pos| - spacing | / length, after the move; "
               "nearest is another agent, never the agent itself.",
    "timestep": "one thread per environment (agent 0) counts the step: timestep += 1.",
    "done": "agent 0 sets done = timestep >= episode_length (after counting the step).",
    "done (returned)": "agent 0 sets done = timestep >= episode_length.",
}
SPARE_THREADS = ("threads past the last agent must not touch memory: keep active = agent < "
                 "num_agents and do the work under `if active:`, on both sides of the "
                 "barrier.")


@dataclass(frozen=True)
class SpacingConfig(GatherConfig):
    spacing: float = 1.0

    def validate(self) -> None:
        super().validate()
        require(self.spacing > 0, "spacing must be positive.")


def nearest_offsets(pos: np.ndarray) -> np.ndarray:
    """pos[nearest] - pos per agent: the nearest other agent, the first in index order on a
    tie (what a loop with a strict `<` finds)."""
    offset = pos[:, None, :] - pos[:, :, None]  # [env, agent, other] = pos[other] - pos[agent]
    far = np.abs(offset)
    agents = np.arange(pos.shape[1])
    far[:, agents, agents] = np.inf  # an agent is not its own neighbour
    nearest = far.argmin(axis=2)
    return np.take_along_axis(offset, nearest[..., None], axis=2)[..., 0]


def spacing_observe(pos, offset, length, obs):
    obs[..., 0] = pos / length
    obs[..., 1] = offset / length


def spacing_reference(pos, moves, actions, obs, rewards, done, timestep, episode_length,
                      length, spacing):
    """The spacing step in NumPy, all environments at once: every agent moves, then each
    finds its nearest neighbour among the moved agents, and is rewarded for keeping
    `spacing` from it."""
    pos[...] = np.minimum(np.maximum(pos + moves[actions], np.float32(0.0)), length)
    offset = nearest_offsets(pos)
    rewards[...] = -np.abs(np.abs(offset) - spacing) / length
    spacing_observe(pos, offset, length, obs)
    timestep += 1
    done[:] = timestep >= episode_length


class Spacing(Gather):
    """Agents on a line that keep `spacing` from their nearest neighbour: Gather's folder
    and training config, with the learner's kernels as its steps."""

    Config = SpacingConfig
    step_kernels = ("spacing_step",)
    tolerance = Tolerance(why="subtractions, an abs and a divide: every backend rounds alike")

    def __init__(self, numba_kernel=None, cuda_c_source=None, config=None, **changes):
        super().__init__(config, **changes)
        self._numba_kernel = numba_kernel
        self._cuda_c_source = cuda_c_source

    def initial_state(self, num_envs, rng):
        state = super().initial_state(num_envs, rng)
        pos, obs = state["pos"].data, state[OBS].data
        spacing_observe(pos, nearest_offsets(pos), np.float32(self.config.length), obs)
        return state

    def constants(self):
        return {"length": float(self.config.length), "spacing": float(self.config.spacing)}

    def episode_metrics(self):
        length, spacing = self.config.length, self.config.spacing
        return {"gap_error": EpisodeMetric(
            "mean |gap to the nearest neighbour - spacing| at the end",
            lambda store: ((store[OBS][..., 1] * length).abs() - spacing).abs().mean(1))}

    def numba_kernels(self):
        return [self._numba_kernel]

    def cuda_sources(self):
        return [self._cuda_c_source]

    def reference_step(self):
        return spacing_reference


def check_spacing_step(numba_kernel, cuda_c_source, backend: str | None = None) -> Verdict:
    """Check both halves of the spacing exercise; `backend` is the one the notebook runs.
    The Verdict is true only when both ran and were right (the last line says what was not
    run)."""
    if numba_kernel is None or cuda_c_source is None:
        print("Not yet: write both the Numba kernel and the CUDA C source of spacing_step.")
        return not_yet()

    def run(half: str, label: str) -> bool:
        if not half.reads_cuda_c and simulator_on():
            problems = _count_barriers(numba_kernel, label)
            if problems is None or (problems and NO_BARRIER not in problems):
                return False  # printed: a crash, a hang, or a barrier some threads skip
        else:  # on a GPU: read, since a launch could hang
            problems = (numba_barrier_problems(numba_kernel) if not half.reads_cuda_c
                        else _cuda_c_problems(cuda_c_source))
            if UNREACHED in problems:
                print(f"{label}: read from its code and not run, because {UNREACHED}")
                return False
        if not _run_spacing(numba_kernel, cuda_c_source, half, label, problems):
            return False
        return not half.reads_cuda_c or _synccheck_cuda_c(cuda_c_source, label)

    def check_unrun_cuda_c() -> bool:
        problems = _cuda_c_problems(cuda_c_source)
        if problems:
            print(f"{LABEL}: read from its code: {problems[0]}")
            return False
        print(f"{LABEL}: its barrier reads right; whether every thread reaches it was NOT "
              "checked by a run here (that needs PyCUDA on a GPU).")
        return compile_only(cuda_c_source, EnvWrapper(Spacing(), 1, "numpy").store,
                            f"the parameters are {SPACING_PARAMETERS}.", name="spacing_step")

    return check_halves(backend, run, check_unrun_cuda_c,
                        "every agent moves, waits, then finds its nearest neighbour, in every "
                        "environment, on every step, in both languages.")


def _cuda_c_problems(source) -> list[str]:
    try:
        return cuda_c_barrier_problems(cuda_c.read_source(source), "spacing_step")
    except WdTeachError:
        return []  # the compile step says what is wrong with it


def _count_barriers(kernel, label: str) -> list[str] | None:
    """On the simulator: launch the step once with a block larger than the agents (the next
    whole warp), counting the barriers each thread reaches. What the counts show (see
    barriers.barrier_problems, printed when a barrier was skipped), or None when the launch
    failed or hung (printed)."""
    num_envs, num_agents = spacing_check_sizes()
    block = (num_agents // WARP + 1) * WARP

    def launch() -> list[str]:
        env = Spacing(kernel, num_agents=num_agents, episode_length=6, length=4.0,
                      step_size=0.5)
        wrapper = EnvWrapper(env, num_envs, "numba")
        with counting_barriers() as counts:
            wrapper.launcher.launch("spacing_step", block=(block, 1, 1))
        return barrier_problems(counts)

    where = f"{label}, a block of {block} threads for {num_agents} agents"
    done = _within_time_limit(launch)
    if done is None:
        print(f"{where}: did not finish within {TIME_LIMIT} s. Is there a loop that never "
              "ends?")
        return None
    problems, err = done
    if err is not None:
        say_why_it_failed(err, where, f"the parameters are {SPACING_PARAMETERS}, named as in "
                          "the store.", crash_hint=SPARE_THREADS)
        return None
    if problems and NO_BARRIER not in problems:
        print(f"{where}: {problems[0]}")
    return problems


#: What synccheck runs: the learner's CUDA C, launched once with a block of spare threads.
SYNCCHECK_SCRIPT = """
import sys
import wd_teach  # first: it chooses between the GPU and Numba's simulator
import torch
from wd_teach.env.wrapper import EnvWrapper
from wd_teach.exercises.lesson_05 import Spacing

source = sys.stdin.read()
num_envs, num_agents, block = (int(arg) for arg in sys.argv[1:4])
wrapper = EnvWrapper(Spacing(None, source, num_agents=num_agents), num_envs, "pycuda")
wrapper.launcher.launch("spacing_step", block=(block, 1, 1))
torch.cuda.synchronize()
print("launched")
"""


def _synccheck_cuda_c(source, label: str) -> bool:
    """On a GPU: the CUDA C launched once under compute-sanitizer's synccheck, with a block
    larger than the agents. True unless it finds a barrier error (printed); where it cannot
    run, says so (the code was read instead)."""
    num_envs, num_agents = spacing_check_sizes()
    block = (num_agents // WARP + 1) * WARP
    found = synccheck(SYNCCHECK_SCRIPT, str(num_envs), str(num_agents), str(block),
                      stdin=cuda_c.read_source(source))
    if isinstance(found, str):
        print(f"{label}: whether every thread reaches the barrier was read from the code, not "
              f"watched: {found}.")
        return True
    if found:
        print(f"{label}, a block of {block} threads for {num_agents} agents: {found[0]}")
        return False
    print(f"{label}: compute-sanitizer's synccheck, a block of {block} threads for "
          f"{num_agents} agents: every thread reaches the barrier.")
    return True


def spacing_check_sizes() -> tuple[int, int]:
    """(envs, agents per env) for the checker: the lesson's on the simulator; on a GPU more
    than one warp of 32 agents per env, so that agents in different warps read each other."""
    sizes = lesson_sizes()
    return min(sizes.num_envs, 16), max(2, sizes.num_agents)


def _run_spacing(numba_kernel, cuda_c_source, backend: str, label: str,
                 problems: list[str]) -> bool:
    num_envs, num_agents = spacing_check_sizes()
    env = Spacing(numba_kernel, cuda_c_source, num_agents=num_agents, episode_length=6,
                  length=4.0, step_size=0.5)
    steps = env.episode_length + 2  # past the end of an episode and into the next
    done = _within_time_limit(lambda: check_consistency(env, ["numpy", backend],
                                                        num_envs=num_envs, steps=steps))
    if done is None:
        print(f"{label}: did not finish within {TIME_LIMIT} s. Is there a loop that never "
              "ends, or a barrier inside a branch that only some threads take?")
        return False
    report, err = done
    if err is not None:
        say_why_it_failed(err, label, f"the parameters are {SPACING_PARAMETERS}, named as in "
                          "the store.", crash_hint=None)
        return False
    found = report.divergence[backend]
    if found is not None:
        print(f"{label}: first divergence from the NumPy reference at {found}.")
        print(f"Hint: {SPACING_HINTS.get(found.array, 'compare with spacing_reference.')}")
        if problems:  # what the code shows, whatever array parted first
            print(f"And: {problems[0]}")
        return False
    if problems:
        print(f"{label}: it agreed with the reference on this run, but {problems[0]}")
        return False
    print(f"{label}: ran on {backend} beside the NumPy reference, {num_envs} environments of "
          f"{num_agents} agents for {steps} steps: they agree at every step.")
    return True


def _within_time_limit(run):
    """(result, None) or (None, error) from run(), or None when it takes over TIME_LIMIT s.

    On the simulator the run goes on in a thread of its own, so a kernel that never ends
    cannot hang the notebook (its thread is left behind). On a GPU it runs here: a PyCUDA
    context belongs to the thread that made it, and a kernel stuck on the GPU would not be
    stopped by a timeout on the host anyway; what could hang there (a return before the
    barrier) is refused before the launch."""
    outcome = []
    if not simulator_on():
        try:
            return run(), None
        except Exception as err:  # reported by the caller, in words
            return None, err

    def target():
        try:
            outcome.append((run(), None))
        except Exception as err:  # reported by the caller, in words
            outcome.append((None, err))

    worker = threading.Thread(target=target, daemon=True)
    worker.start()
    worker.join(TIME_LIMIT)
    return outcome[0] if outcome else None
