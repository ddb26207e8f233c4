"""CartPole: push a cart left or right to keep the pole on it upright.

The dynamics are gymnasium's CartPole-v1 (Euler steps of 0.02 s), in float32 instead of
float64. One agent per environment: a single-agent env is a multi-agent env of one agent, so
each block has one thread. The state is the observation: x, x_dot, theta, theta_dot.
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


@dataclass(frozen=True)
class CartPoleConfig:
    episode_length: int = 500
    gravity: float = 9.8
    mass_cart: float = 1.0
    mass_pole: float = 0.1
    half_pole_length: float = 0.5
    force: float = 10.0
    tau: float = 0.02  # seconds per step
    x_threshold: float = 2.4  # the episode ends when the cart leaves [-2.4, 2.4]
    theta_threshold: float = 12 * 2 * math.pi / 360  # or the pole leans past 12 degrees
    start_range: float = 0.05  # every state variable starts uniform in [-0.05, 0.05]

    def validate(self) -> None:
        require(self.episode_length >= 1, f"episode_length must be at least 1, got "
                                          f"{self.episode_length}.")
        require_positive(self, "mass_cart", "mass_pole", "half_pole_length", "tau",
                         "x_threshold", "theta_threshold")
        require(self.start_range >= 0, f"start_range must be >= 0, got {self.start_range}.")


class CartPole(Env):
    Config = CartPoleConfig
    step_kernels = ("cartpole_step",)
    tolerance = Tolerance(rtol=1e-4, atol=1e-5,
                          why="a GPU's sinf/cosf are within 2 ulp and its compiler fuses "
                              "multiply-adds; the falling pole grows such differences")
    gymnasium_twin = GymnasiumTwin(
        "CartPole-v1", ("x", "x_dot", "theta", "theta_dot"), steps=60, rtol=1e-4, atol=1e-5,
        why="float32 against float64: over 200 envs the largest difference seen was 4e-6 in "
            "60 steps, in which every pole fell", every_episode_terminates=True)

    @property
    def num_agents(self) -> int:
        return 1

    @property
    def observation_space(self) -> spaces.Box:
        c = self.config
        high = np.array([2 * c.x_threshold, np.inf, 2 * c.theta_threshold, np.inf], np.float32)
        return spaces.Box(-high, high, dtype=np.float32)

    @property
    def action_space(self) -> spaces.Discrete:
        return spaces.Discrete(2)  # 0: push left, 1: push right

    def initial_state(self, num_envs, rng):
        c = self.config
        start = rng.uniform(-c.start_range, c.start_range, (num_envs, 1, 4)).astype(np.float32)
        state = {name: StateArray(np.ascontiguousarray(start[..., i]))
                 for i, name in enumerate(("x", "x_dot", "theta", "theta_dot"))}
        state[OBS] = StateArray(start)
        return state

    def draw_frame(self, ax, frames, k: int) -> None:
        """The cart as a box on its track, the pole as a line from it (gymnasium's picture)."""
        from matplotlib.patches import Rectangle  # matplotlib only when a game is drawn

        c, x, theta = self.config, float(frames["x"][k][0]), float(frames["theta"][k][0])
        ax.clear()
        ax.set(xlim=(-c.x_threshold - 0.5, c.x_threshold + 0.5), ylim=(-0.5, 2.5),
               aspect="equal", yticks=[], title=f"step {k}")
        ax.axhline(0, color="0.5", lw=1)
        ax.add_patch(Rectangle((x - 0.25, -0.15), 0.5, 0.3, color="tab:blue"))
        top = (x + 2 * c.half_pole_length * math.sin(theta),
               2 * c.half_pole_length * math.cos(theta))
        ax.plot([x, top[0]], [0, top[1]], color="tab:orange", lw=6, solid_capstyle="round")

    def constants(self):
        c = self.config
        values = {"gravity": c.gravity, "mass_pole": c.mass_pole,
                  "total_mass": c.mass_pole + c.mass_cart, "half_pole_length": c.half_pole_length,
                  "polemass_length": c.mass_pole * c.half_pole_length, "force": c.force,
                  "tau": c.tau, "x_threshold": c.x_threshold,
                  "theta_threshold": c.theta_threshold}
        return {name: float(value) for name, value in values.items()}  # float32 in the store
