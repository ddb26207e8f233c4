"""MountainCarContinuous's step in Numba: the twin of step.cu, line for line.

cos is cast with np.float32(...): on a GPU math.cos of a float32 is already float32 (cosf),
on the simulator it is a Python float, which would turn the rest of the arithmetic into
float64.
"""

import math

import numpy as np
from numba import cuda

from wd_teach.env import agent_id, env_id

THREE = np.float32(3.0)
ZERO = np.float32(0.0)
GOAL_REWARD = np.float32(100.0)
ACTION_COST = np.float32(0.1)


@cuda.jit
def mountain_car_continuous_step(position, velocity, actions, obs, rewards, done, timestep,
                                 episode_length, min_position, max_position, max_speed,
                                 goal_position, goal_velocity, max_action, power, gravity,
                                 num_agents):
    env = env_id()
    agent = agent_id()
    if agent >= num_agents:
        return
    i = (env, agent)
    action = actions[env, agent, 0]
    force = min(max(action, -max_action), max_action)
    speed = velocity[i] + force * power - gravity * np.float32(math.cos(THREE * position[i]))
    speed = min(max(speed, -max_speed), max_speed)
    place = min(max(position[i] + speed, min_position), max_position)
    if place == min_position and speed < ZERO:  # the left wall
        speed = ZERO
    position[i] = place
    velocity[i] = speed

    arrived = place >= goal_position and speed >= goal_velocity
    rewards[i] = (GOAL_REWARD if arrived else ZERO) - ACTION_COST * (action * action)
    t = timestep[env] + 1
    timestep[env] = t
    done[env] = arrived or t >= episode_length
    o = obs[env, agent]
    o[0] = position[i]
    o[1] = velocity[i]
