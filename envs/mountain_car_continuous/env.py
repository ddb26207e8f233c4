"""MountainCarContinuous: MountainCar with a throttle instead of three buttons.

The dynamics are gymnasium's MountainCarContinuous-v0 in float32. The action is one force in
[-1, 1] per agent, so `actions` is a float32 array [envs, agents, 1]. Reaching the flag pays
100; every step costs 0.1 times the squared action, as given (a policy that pushes hard
and never arrives does worse than one that stands still). The episode is cut at 999 steps,
as gymnasium's time limit. The state is the observation: position and velocity.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from gymnasium import spaces

from wd_teach.env import (
    OBS,
    Env,
    GymnasiumTwin,
    StateArray,
    Tolerance,
    require,
    require_positive,
)


@dataclass(frozen=True)
class MountainCarContinuousConfig:
    episode_length: int = 999
    min_position: float = -1.2
    max_position: float = 0.6
    max_speed: float = 0.07
    goal_position: float = 0.45  # the flag (lower than MountainCar-v0's 0.5)
    goal_velocity: float = 0.0
    max_action: float = 1.0  # the force is clipped to [-1, 1] ...
    power: float = 0.0015  # ... and times this is the engine's push
    gravity: float = 0.0025  # the hill's pull, times cos(3 * position)
    start_low: float = -0.6  # the position starts uniform in [-0.6, -0.4], at rest
    start_high: float = -0.4

    def validate(self) -> None:
        require(self.episode_length >= 1, f"episode_length must be at least 1, got "
                                          f"{self.episode_length}.")
        require_positive(self, "max_speed", "max_action", "power", "gravity")
        require(self.min_position < self.goal_position <= self.max_position,
                f"goal_position must be in ({self.min_position}, {self.max_position}], got "
                f"{self.goal_position}.")
        require(self.min_position <= self.start_low <= self.start_high < self.goal_position,
                f"the start [{self.start_low}, {self.start_high}] must lie between "
                f"min_position and goal_position.")


class MountainCarContinuous(Env):
    Config = MountainCarContinuousConfig
    step_kernels = ("mountain_car_continuous_step",)
    tolerance = Tolerance(rtol=1e-5, atol=1e-6,
                          why="a GPU's cosf is within 2 ulp and its compiler fuses "
                              "multiply-adds; the velocity carries them from step to step")
    gymnasium_twin = GymnasiumTwin(
        "MountainCarContinuous-v0", ("position", "velocity"), steps=120, rtol=1e-5, atol=1e-6,
        why="float32 against gymnasium's float64 steps (it rounds its state to float32 after "
            "each): over 200 envs the largest difference seen was 4e-7 in 120 steps")

    @property
    def num_agents(self) -> int:
        return 1

    @property
    def observation_space(self) -> spaces.Box:
        c = self.config
        return spaces.Box(np.array([c.min_position, -c.max_speed], np.float32),
                          np.array([c.max_position, c.max_speed], np.float32), dtype=np.float32)

    @property
    def action_space(self) -> spaces.Box:
        force = self.config.max_action
        return spaces.Box(-force, force, shape=(1,), dtype=np.float32)

    def initial_state(self, num_envs, rng):
        c = self.config
        position = rng.uniform(c.start_low, c.start_high, (num_envs, 1)).astype(np.float32)
        velocity = np.zeros((num_envs, 1), np.float32)
        return {"position": StateArray(position), "velocity": StateArray(velocity),
                OBS: StateArray(np.stack([position, velocity], axis=-1))}

    def constants(self):
        c = self.config
        values = {"min_position": c.min_position, "max_position": c.max_position,
                  "max_speed": c.max_speed, "goal_position": c.goal_position,
                  "goal_velocity": c.goal_velocity, "max_action": c.max_action,
                  "power": c.power, "gravity": c.gravity}
        return {name: float(value) for name, value in values.items()}  # float32 in the store
