"""Tag on a continuous square field: taggers chase runners."""

from wd_teach_envs.tag_continuous.env import TagContinuous, TagContinuousConfig

__all__ = ["TagContinuous", "TagContinuousConfig"]
