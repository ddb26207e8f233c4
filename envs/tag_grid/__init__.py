"""Tag on a grid: taggers chase runners from cell to cell."""

from wd_teach_envs.tag_grid.env import TagGrid, TagGridConfig

__all__ = ["TagGrid", "TagGridConfig"]
