"""Gather: agents on a line [0, length], each rewarded for being near the centre of its
environment's group. Every agent reads every other agent's position in the same step, so
this is lesson 05's env of interacting agents.

Its step kernel has two halves: every agent moves, then every agent reads all the new
positions. Between them a barrier waits until every agent of the block has moved. A barrier
holds only the threads of one block, so Gather declares `one_block_per_env`, and a launch
that would split an environment over several blocks is refused.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from gymnasium import spaces

from wd_teach.env import (
    MAX_THREADS_PER_BLOCK,
    OBS,
    Env,
    EpisodeMetric,
    StateArray,
    Tolerance,
    require,
)


@dataclass(frozen=True)
class GatherConfig:
    num_agents: int = 8
    episode_length: int = 40
    length: float = 10.0
    step_size: float = 0.25

    def validate(self) -> None:
        require(2 <= self.num_agents <= MAX_THREADS_PER_BLOCK,
                f"num_agents must be 2 to {MAX_THREADS_PER_BLOCK} (a group, in one block), "
                f"got {self.num_agents}.")
        require(self.episode_length >= 1, "episode_length must be at least 1.")
        require(self.length > 0 and self.step_size > 0, "length and step_size must be positive.")


def centre_of(pos: np.ndarray) -> np.ndarray:
    """Each environment's mean position, added agent by agent in index order: the order in
    which every thread of the kernels adds, so that all three backends round alike."""
    total = np.zeros(pos.shape[0], np.float32)
    for agent in range(pos.shape[1]):
        total += pos[:, agent]
    return total / np.float32(pos.shape[1])


def observe(pos, centre, length, obs) -> None:
    obs[..., 0] = pos / length
    obs[..., 1] = (centre[:, None] - pos) / length


class Gather(Env):
    """Agents on a line that learn to gather where their group is."""

    Config = GatherConfig
    step_kernels = ("gather_step",)
    one_block_per_env = True  # the step kernel waits at a barrier for the whole group
    tolerance = Tolerance(why="adds in one fixed order and one divide: every backend rounds "
                              "alike")

    @property
    def num_agents(self) -> int:
        return self.config.num_agents

    @property
    def observation_space(self) -> spaces.Box:
        return spaces.Box(-1.0, 1.0, shape=(2,), dtype=np.float32)  # pos, centre - pos

    @property
    def action_space(self) -> spaces.Discrete:
        return spaces.Discrete(3)  # 0: left, 1: stay, 2: right

    def moves(self) -> np.ndarray:
        """A move looked up in a table, not computed as (action - 1) * step_size: a product
        and an add would be fused into one instruction on a GPU and round differently."""
        step = self.config.step_size
        return np.array([-step, 0.0, step], np.float32)

    def initial_state(self, num_envs, rng):
        c = self.config
        pos = rng.uniform(0, c.length, (num_envs, c.num_agents)).astype(np.float32)
        obs = np.zeros((num_envs, c.num_agents, 2), np.float32)
        observe(pos, centre_of(pos), np.float32(c.length), obs)
        return {"pos": StateArray(pos),
                "moves": StateArray(self.moves(), per="shared", reset=False),
                OBS: StateArray(obs)}

    def constants(self):
        return {"length": float(self.config.length)}

    def episode_metrics(self):
        return {"spread": EpisodeMetric("spread of the group at the end",
                                        lambda store: store["pos"].amax(1) - store["pos"].amin(1))}
