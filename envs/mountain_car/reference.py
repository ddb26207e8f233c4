"""MountainCar's step in NumPy over all environments at once: the twin of step.cu and
step_numba.py, operation for operation in float32."""

import numpy as np

from wd_teach.env import cos32

THREE = np.float32(3.0)
ZERO = np.float32(0.0)


def step(position, velocity, actions, obs, rewards, done, timestep, episode_length,
         min_position, max_position, max_speed, goal_position, goal_velocity, force, gravity):
    push = (actions - 1).astype(np.float32) * force  # -force, 0 or +force
    speed = velocity + push + cos32(THREE * position) * (-gravity)
    speed = np.clip(speed, -max_speed, max_speed)
    place = np.clip(position + speed, min_position, max_position)
    speed = np.where((place == min_position) & (speed < ZERO), ZERO, speed)  # the left wall
    position[...] = place
    velocity[...] = speed

    arrived = (place >= goal_position) & (speed >= goal_velocity)
    rewards[:] = -1.0
    timestep += 1
    done[:] = (arrived[:, 0] | (timestep >= episode_length)).astype(np.int32)
    obs[..., 0] = position
    obs[..., 1] = velocity
