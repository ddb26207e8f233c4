"""Acrobot: swing the tip of a two-link pendulum above a line, with a motor at the elbow only.

The dynamics are gymnasium's Acrobot-v1 (the book's equations, integrated with one
Runge-Kutta step of 0.2 s per env step) in float32 instead of float64. Each step costs -1
until the tip is one link's length above the shoulder; the episode ends then, or is cut at
500 steps (as gymnasium's time limit). The state is the two joint angles and their speeds;
the observation is cos and sin of each angle, then the two speeds.
"""

from __future__ import annotations

import math
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
from wd_teach_envs.acrobot.reference import observe

STATE = ("theta1", "theta2", "dtheta1", "dtheta2")


@dataclass(frozen=True)
class AcrobotConfig:
    episode_length: int = 500
    dt: float = 0.2  # seconds per step: one Runge-Kutta (RK4) step
    link_length_1: float = 1.0  # the upper link; the lower one's length only draws it
    link_mass_1: float = 1.0
    link_mass_2: float = 1.0
    link_com_1: float = 0.5  # where each link's centre of mass is, from its joint
    link_com_2: float = 0.5
    link_moi: float = 1.0  # each link's moment of inertia
    gravity: float = 9.8
    max_vel_1: float = 4 * math.pi  # the joints' speeds are clipped to these
    max_vel_2: float = 9 * math.pi
    start_range: float = 0.1  # every state variable starts uniform in [-0.1, 0.1]

    def validate(self) -> None:
        require(self.episode_length >= 1, f"episode_length must be at least 1, got "
                                          f"{self.episode_length}.")
        require_positive(self, "dt", "link_length_1", "link_mass_1", "link_mass_2",
                         "link_com_1", "link_com_2", "link_moi", "max_vel_1", "max_vel_2")
        require(self.start_range >= 0, f"start_range must be >= 0, got {self.start_range}.")


class Acrobot(Env):
    Config = AcrobotConfig
    step_kernels = ("acrobot_step",)
    tolerance = Tolerance(rtol=1e-4, atol=1e-4,
                          why="a GPU's sinf/cosf are within 2 ulp and its compiler fuses "
                              "multiply-adds; four RK4 stages per step grow such differences")
    gymnasium_twin = GymnasiumTwin(
        "Acrobot-v1", STATE, steps=60, rtol=1e-4, atol=1e-5,
        why="float32 against float64: over 200 envs the largest difference seen was 4e-6 in "
            "60 steps; the swinging links grow it step by step")

    @property
    def num_agents(self) -> int:
        return 1

    @property
    def observation_space(self) -> spaces.Box:
        c = self.config
        high = np.array([1.0, 1.0, 1.0, 1.0, c.max_vel_1, c.max_vel_2], np.float32)
        return spaces.Box(-high, high, dtype=np.float32)

    @property
    def action_space(self) -> spaces.Discrete:
        return spaces.Discrete(3)  # torque -1, 0 or +1 at the elbow

    def initial_state(self, num_envs, rng):
        c = self.config
        start = rng.uniform(-c.start_range, c.start_range, (num_envs, 1, 4)).astype(np.float32)
        state = {name: StateArray(np.ascontiguousarray(start[..., i]))
                 for i, name in enumerate(STATE)}
        obs = np.zeros((num_envs, 1, 6), np.float32)
        observe(*(state[name].data for name in STATE), obs)
        state[OBS] = StateArray(obs)
        return state

    def constants(self):
        """The dynamics' terms that depend on the config only, worked out once."""
        c = self.config
        m1, m2, l1, lc1, lc2 = (c.link_mass_1, c.link_mass_2, c.link_length_1, c.link_com_1,
                                c.link_com_2)
        values = {"dt": c.dt, "max_vel_1": c.max_vel_1, "max_vel_2": c.max_vel_2,
                  "d1_base": m1 * lc1**2 + m2 * (l1**2 + lc2**2) + 2 * c.link_moi,
                  "d2_base": m2 * lc2**2 + c.link_moi,
                  "coupling": m2 * l1 * lc2,
                  "phi1_term": (m1 * lc1 + m2 * l1) * c.gravity,
                  "phi2_term": m2 * lc2 * c.gravity}
        return {name: float(value) for name, value in values.items()}  # float32 in the store
