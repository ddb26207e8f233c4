"""MountainCar: gymnasium's MountainCar-v0, one car per environment."""

from wd_teach_envs.mountain_car.env import MountainCar, MountainCarConfig

__all__ = ["MountainCar", "MountainCarConfig"]
