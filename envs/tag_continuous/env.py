"""Tag on a continuous square field: taggers chase runners, each agent steering itself.

Each step an agent picks an acceleration level and a turn level (two discrete heads). Its
speed is capped (taggers and runners may differ) and it stops at the field's edge, with a
penalty. Headings are points of a compass of num_directions: a turn moves the needle a
whole number of points, and the direction's (cos, sin) comes from a table made once on the
host. So the step needs no cos or sin of its own, and every backend rounds alike.

Everything shared with the grid game (the catch, the observation of positions, the end of
the game) is in envs/_tag/; this file and its three steps hold only the movement and the
speed and heading features of the observation.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from gymnasium import spaces

from wd_teach.env import StateArray, require
from wd_teach_envs._tag.game import TagConfig, TagGame


@dataclass(frozen=True)
class TagContinuousConfig(TagConfig):
    field_size: float = 20.0
    tagging_distance: float = 0.5
    tagger_max_speed: float = 0.5  # distance per step
    runner_max_speed: float = 0.5
    accelerations: tuple[float, ...] = (-0.1, -0.05, 0.0, 0.05, 0.1)  # speed change per step
    num_directions: int = 72  # a compass of 5-degree points
    turns: tuple[int, ...] = (-6, -3, -1, 0, 1, 3, 6)  # compass points per step

    def validate(self) -> None:
        super().validate()
        require(self.field_size > 0, f"field_size must be positive, got {self.field_size}.")
        require(self.tagging_distance >= 0, f"tagging_distance must be >= 0, got "
                                            f"{self.tagging_distance}.")
        require(self.tagger_max_speed > 0 and self.runner_max_speed > 0,
                f"max speeds must be positive, got tagger {self.tagger_max_speed}, runner "
                f"{self.runner_max_speed}.")
        require(len(self.accelerations) >= 1, "accelerations needs at least one level.")
        require(isinstance(self.num_directions, int) and self.num_directions >= 1,
                f"num_directions must be a positive whole number, got {self.num_directions!r}.")
        require(len(self.turns) >= 1 and all(
            isinstance(t, int) and abs(t) < self.num_directions for t in self.turns),
            f"turns must be whole numbers of compass points, each smaller than "
            f"num_directions={self.num_directions} in size, got {self.turns}.")


class TagContinuous(TagGame):
    Config = TagContinuousConfig
    game_kernels = ("tag_continuous_move", "tag_catch", "tag_continuous_observe")
    game_features = ("speed", "cos heading", "sin heading")  # speed / its max speed

    @property
    def action_space(self) -> spaces.MultiDiscrete:
        """Head 0: the acceleration level; head 1: the turn level."""
        return spaces.MultiDiscrete([len(self.config.accelerations), len(self.config.turns)])

    def fast_kernels(self):
        """Speed only: the observe's twin behind the fast door (envs/_tag/fast.py says how)."""
        from wd_teach_envs._tag.fast import observe_twin

        return (observe_twin(self, "tag_continuous_observe"),)

    def initial_positions(self, num_envs, rng):
        size = self.config.field_size
        shape = (num_envs, self.num_agents)
        return (rng.uniform(0, size, shape).astype(np.float32),
                rng.uniform(0, size, shape).astype(np.float32))

    def game_state(self, num_envs, rng):
        c = self.config
        shape = (num_envs, self.num_agents)
        angles = 2 * np.pi * np.arange(c.num_directions) / c.num_directions
        return {
            "speed": StateArray(np.zeros(shape, np.float32)),
            "heading": StateArray(rng.integers(0, c.num_directions, shape).astype(np.int32)),
            "accelerations": StateArray(np.array(c.accelerations, np.float32), per="shared",
                                        reset=False),
            "turns": StateArray(np.array(c.turns, np.int32), per="shared", reset=False),
            "direction_x": StateArray(np.cos(angles).astype(np.float32), per="shared",
                                      reset=False),
            "direction_y": StateArray(np.sin(angles).astype(np.float32), per="shared",
                                      reset=False),
        }

    def game_constants(self):
        c = self.config
        return {"field_size": float(c.field_size),
                "tagging_distance": float(c.tagging_distance),
                "tagger_max_speed": float(c.tagger_max_speed),
                "runner_max_speed": float(c.runner_max_speed), "num_directions": c.num_directions}
