"""Pendulum's step in Numba: the twin of step.cu, line for line.

Transcendentals are cast with np.float32(...): on a GPU math.sin of a float32 is already
float32 (sinf), on the simulator it is a Python float, which would turn the rest of the
arithmetic into float64.
"""

import math

import numpy as np
from numba import cuda

from wd_teach.env import agent_id, env_id

PI = np.float32(math.pi)
TWO_PI = np.float32(2 * math.pi)
SPEED_COST = np.float32(0.1)
TORQUE_COST = np.float32(0.001)


@cuda.jit(device=True)
def angle_normalize(angle):
    """The angle moved into [-pi, pi): fmod is exact, then one add."""
    turned = np.float32(math.fmod(angle + PI, TWO_PI))
    if turned < np.float32(0.0):
        turned = turned + TWO_PI
    return turned - PI


@cuda.jit(device=True)
def observe(theta, theta_dot, o):
    o[0] = np.float32(math.cos(theta))
    o[1] = np.float32(math.sin(theta))
    o[2] = theta_dot


@cuda.jit
def pendulum_step(theta, theta_dot, actions, obs, rewards, done, timestep, episode_length,
                  max_speed, max_torque, dt, gravity_term, torque_term, num_agents):
    env = env_id()
    agent = agent_id()
    if agent >= num_agents:
        return
    i = (env, agent)
    torque = min(max(actions[env, agent, 0], -max_torque), max_torque)
    upright = angle_normalize(theta[i])
    costs = upright * upright + SPEED_COST * (theta_dot[i] * theta_dot[i]) + TORQUE_COST * (
        torque * torque)

    speed = theta_dot[i] + (gravity_term * np.float32(math.sin(theta[i])) +
                            torque_term * torque) * dt
    speed = min(max(speed, -max_speed), max_speed)
    theta[i] = theta[i] + speed * dt
    theta_dot[i] = speed

    rewards[i] = -costs
    t = timestep[env] + 1
    timestep[env] = t
    done[env] = t >= episode_length
    observe(theta[i], theta_dot[i], obs[env, agent])
