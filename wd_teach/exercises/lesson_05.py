"""Checker for 05_custom_env: the step of the parking line, written twice.

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
parameters are checked against the store.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from gymnasium import spaces

from wd_teach import cuda_c
from wd_teach.device import choose_backend, discover
from wd_teach.env import OBS, Env, StateArray, Tolerance, require
from wd_teach.env.consistency import check_consistency
from wd_teach.env.wrapper import EnvWrapper
from wd_teach.errors import WdTeachError
from wd_teach.exercises.cuda_c_check import LABEL, bind_and_compile
from wd_teach.launch import MAX_THREADS_PER_BLOCK
from wd_teach.sizes import lesson_sizes

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


def check_parking_step(numba_kernel, cuda_c_source, backend: str | None = None) -> bool:
    """Check both halves of the exercise; `backend` is the one the notebook runs on."""
    if numba_kernel is None or cuda_c_source is None:
        print("Not yet: write both the Numba kernel and the CUDA C source of parking_step.")
        return False
    backend = choose_backend(backend)
    order = [backend, *(b for b in ("numba", "pycuda") if b != backend)]
    right = True
    for half in order:
        label = "Numba kernel" if half == "numba" else "CUDA C kernel"
        if half in discover().backends:
            ok = _run_beside_reference(numba_kernel, cuda_c_source, half, label)
        elif half == "pycuda":
            ok = _compile_only(cuda_c_source)
        else:
            print(f"{label}: Numba cannot run here, so it was not checked. See wd_teach.doctor().")
            ok = False
        right = right and ok
    if right:
        print("All right: the particles park, in every environment, on every step.")
    return right


def _run_beside_reference(numba_kernel, cuda_c_source, backend: str, label: str) -> bool:
    sizes = lesson_sizes()
    env = ParkingLine(numba_kernel, cuda_c_source, num_particles=sizes.num_agents,
                      episode_length=max(4, sizes.episode_length), length=5.0)
    steps = env.episode_length + 2  # past the end of an episode and into the next
    split = max(1, env.num_agents // 2 + 1)
    for max_threads, shape in ((MAX_THREADS_PER_BLOCK, "one block per environment"),
                               (split, "two blocks per environment")):
        try:
            report = check_consistency(env, ["numpy", backend], num_envs=sizes.num_envs,
                                       steps=steps, max_threads=max_threads)
        except WdTeachError as err:
            print(f"{label}: {err}\nHint: the parameters are {PARAMETERS}, named as in the "
                  "store.")
            return False
        except Exception as err:  # the learner's kernel may fail in any way; say how
            print(f"{label} failed with {shape}: {type(err).__name__}: {err}")
            print("Hint: threads past the last agent must do nothing: "
                  "if agent >= num_agents, return.")
            return False
        found = report.divergence[backend]
        if found is not None:
            print(f"{label}, {shape}: first divergence from the NumPy reference at {found}.")
            print(f"Hint: {HINTS.get(found.array, 'compare with parking_reference.')}")
            return False
    print(f"{label}: ran on {backend} beside the NumPy reference for {steps} steps, with one "
          "and with two blocks per environment: they agree at every step.")
    return True


def _compile_only(source) -> bool:
    """Where PyCUDA cannot run: bind the parameters by name and compile with nvcc."""
    try:
        text = cuda_c.read_source(source)
        signatures = cuda_c.kernel_signatures(text)
    except WdTeachError as err:
        print(f"{LABEL}: {err}")
        return False
    if list(signatures) != ["parking_step"]:
        print(f'{LABEL}: found extern "C" __global__ kernels {list(signatures)}; write one, '
              "named parking_step.")
        return False
    store = EnvWrapper(ParkingLine(), 1, "numpy").store
    return bind_and_compile(text, "parking_step", signatures["parking_step"], store,
                            f"the parameters are {PARAMETERS}.")
