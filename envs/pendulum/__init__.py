"""Pendulum: gymnasium's Pendulum-v1, one pendulum per environment, continuous torque."""

from wd_teach_envs.pendulum.env import Pendulum, PendulumConfig

__all__ = ["Pendulum", "PendulumConfig"]
