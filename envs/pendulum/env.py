"""Pendulum: swing a pendulum up and hold it there with a bounded torque.

The dynamics are gymnasium's Pendulum-v1 in float32. The action is continuous: one torque in
[-2, 2] per agent, so `actions` is a float32 array [envs, agents, 1], written by the caller
like any other array (a Gaussian policy's sample, clipped). The episode never ends by itself;
it is cut at episode_length steps (200, as gymnasium's time limit).
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
from wd_teach_envs.pendulum.reference import observe


@dataclass(frozen=True)
class PendulumConfig:
    episode_length: int = 200
    max_speed: float = 8.0
    max_torque: float = 2.0
    dt: float = 0.05
    gravity: float = 10.0
    mass: float = 1.0
    length: float = 1.0
    start_angle: float = np.pi  # theta starts uniform in [-pi, pi]
    start_speed: float = 1.0  # theta_dot starts uniform in [-1, 1]

    def validate(self) -> None:
        require(self.episode_length >= 1, f"episode_length must be at least 1, got "
                                          f"{self.episode_length}.")
        require_positive(self, "max_speed", "max_torque", "dt", "mass", "length")


class Pendulum(Env):
    Config = PendulumConfig
    step_kernels = ("pendulum_step",)
    tolerance = Tolerance(rtol=1e-4, atol=1e-4,
                          why="a GPU's sinf/cosf are within 2 ulp and its compiler fuses "
                              "multiply-adds; float32 angles past a few turns keep ~1e-5")
    gymnasium_twin = GymnasiumTwin(
        "Pendulum-v1", ("theta", "theta_dot"), steps=40, rtol=1e-4, atol=1e-4,
        why="float32 against float64: over 200 envs the largest difference seen was 6e-5 in "
            "40 steps (it keeps growing, to 2e-4 by step 60)")

    @property
    def num_agents(self) -> int:
        return 1

    @property
    def observation_space(self) -> spaces.Box:
        high = np.array([1.0, 1.0, self.config.max_speed], np.float32)
        return spaces.Box(-high, high, dtype=np.float32)  # cos(theta), sin(theta), theta_dot

    @property
    def action_space(self) -> spaces.Box:
        torque = self.config.max_torque
        return spaces.Box(-torque, torque, shape=(1,), dtype=np.float32)

    def initial_state(self, num_envs, rng):
        c = self.config
        theta = rng.uniform(-c.start_angle, c.start_angle, (num_envs, 1)).astype(np.float32)
        theta_dot = rng.uniform(-c.start_speed, c.start_speed, (num_envs, 1)).astype(np.float32)
        obs = np.zeros((num_envs, 1, 3), np.float32)
        observe(theta, theta_dot, obs)
        return {"theta": StateArray(theta), "theta_dot": StateArray(theta_dot),
                OBS: StateArray(obs)}

    def constants(self):
        c = self.config
        values = {"max_speed": c.max_speed, "max_torque": c.max_torque, "dt": c.dt,
                  "gravity_term": 3 * c.gravity / (2 * c.length),
                  "torque_term": 3.0 / (c.mass * c.length**2)}
        return {name: float(value) for name, value in values.items()}  # float32 in the store
