"""Huddle: agents on a line [0, length] gather; each is rewarded for being near the centre of
its environment's group, so every agent reads every other agent's position in the same step.

The step kernel moves each agent, then waits at a barrier until every agent of the block has
moved, then reads all positions to find the centre. A barrier holds only the threads of one
block, so this env declares `one_block_per_env`: a launch that would split an environment
over several blocks is refused rather than computing centres from half-moved groups.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from gymnasium import spaces

from wd_teach.env import OBS, Env, EpisodeMetric, StateArray, Tolerance, require


@dataclass(frozen=True)
class HuddleConfig:
    num_agents: int = 8
    episode_length: int = 40
    length: float = 10.0
    step_size: float = 0.5

    def validate(self) -> None:
        require(1 <= self.num_agents <= 1024, f"num_agents must be 1 to 1024 (one block), got "
                                              f"{self.num_agents}.")
        require(self.episode_length >= 1, "episode_length must be at least 1.")
        require(self.length > 0 and self.step_size > 0, "length and step_size must be positive.")


def centre_of(pos: np.ndarray) -> np.ndarray:
    """Each environment's mean position, summed agent by agent in index order: the order in
    which every thread of the kernels adds, so all three agree bit for bit."""
    total = np.zeros(pos.shape[0], np.float32)
    for agent in range(pos.shape[1]):
        total += pos[:, agent]
    return total / np.float32(pos.shape[1])


def observe(pos: np.ndarray, centre: np.ndarray, length, obs: np.ndarray) -> None:
    obs[..., 0] = pos / length
    obs[..., 1] = (centre[:, None] - pos) / length


class Huddle(Env):
    Config = HuddleConfig
    step_kernels = ("huddle_step",)
    one_block_per_env = True
    tolerance = Tolerance(why="adds in one order and one divide: every backend rounds alike")

    @property
    def num_agents(self) -> int:
        return self.config.num_agents

    @property
    def observation_space(self) -> spaces.Box:
        return spaces.Box(-1.0, 1.0, shape=(2,), dtype=np.float32)  # pos, centre - pos

    @property
    def action_space(self) -> spaces.Discrete:
        return spaces.Discrete(3)  # 0: left, 1: stay, 2: right

    def initial_state(self, num_envs, rng):
        c = self.config
        pos = rng.uniform(0, c.length, (num_envs, c.num_agents)).astype(np.float32)
        obs = np.zeros((num_envs, c.num_agents, 2), np.float32)
        observe(pos, centre_of(pos), np.float32(c.length), obs)
        return {"pos": StateArray(pos), OBS: StateArray(obs)}

    def constants(self):
        return {"length": float(self.config.length), "step_size": float(self.config.step_size)}

    def episode_metrics(self):
        return {"spread": EpisodeMetric("spread of the group at the end",
                                        lambda store: store["pos"].amax(1) - store["pos"].amin(1))}
