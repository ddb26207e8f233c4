"""MountainCarContinuous: gymnasium's MountainCarContinuous-v0, one car per environment."""

from wd_teach_envs.mountain_car_continuous.env import (
    MountainCarContinuous,
    MountainCarContinuousConfig,
)

__all__ = ["MountainCarContinuous", "MountainCarContinuousConfig"]
