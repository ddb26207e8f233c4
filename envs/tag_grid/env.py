"""Tag on a grid: each step an agent stays or moves one cell up, down, left or right; a
runner on the same cell as a tagger is caught.

It is the continuous game with whole-number positions and a tagging distance of 0: the
catch, the observation of positions and the end of the game are the shared ones in
envs/_tag/, so this file and its three steps hold only the move. Positions are kept as
float32 (whole numbers are exact in it) so that the shared code serves both games.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from gymnasium import spaces

from wd_teach.env import StateArray, require
from wd_teach_envs._tag.game import TagConfig, TagGame

#: stay, up, down, left, right
MOVE_X = (0, 0, 0, -1, 1)
MOVE_Y = (0, 1, -1, 0, 0)


@dataclass(frozen=True)
class TagGridConfig(TagConfig):
    grid_size: int = 20  # cells along each side

    def validate(self) -> None:
        super().validate()
        require(isinstance(self.grid_size, int) and self.grid_size >= 2,
                f"grid_size must be a whole number of at least 2 cells, got "
                f"{self.grid_size!r}.")


class TagGrid(TagGame):
    Config = TagGridConfig
    game_kernels = ("tag_grid_move", "tag_catch", "tag_grid_observe")

    @property
    def action_space(self) -> spaces.Discrete:
        return spaces.Discrete(len(MOVE_X))  # stay, up, down, left, right

    def fast_kernels(self):
        """Speed only: the observe's twin behind the fast door (envs/_tag/fast.py says how)."""
        from wd_teach_envs._tag.fast import observe_twin

        return (observe_twin(self, "tag_grid_observe"),)

    def initial_positions(self, num_envs, rng):
        shape = (num_envs, self.num_agents)
        cells = self.config.grid_size
        return (rng.integers(0, cells, shape).astype(np.float32),
                rng.integers(0, cells, shape).astype(np.float32))

    def game_state(self, num_envs, rng):
        return {"move_x": StateArray(np.array(MOVE_X, np.int32), per="shared", reset=False),
                "move_y": StateArray(np.array(MOVE_Y, np.int32), per="shared", reset=False)}

    def game_constants(self):
        return {"field_size": float(self.config.grid_size - 1), "tagging_distance": 0.0}
