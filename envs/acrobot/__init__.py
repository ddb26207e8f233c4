"""Acrobot: gymnasium's Acrobot-v1, one two-link pendulum per environment."""

from wd_teach_envs.acrobot.env import Acrobot, AcrobotConfig

__all__ = ["Acrobot", "AcrobotConfig"]
