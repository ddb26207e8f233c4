"""CartPole's step in Numba: the twin of step.cu, line for line.

Transcendentals are cast with np.float32(...): on a GPU math.cos of a float32 is already
float32 (cosf), on the simulator it is a Python float, which would turn the rest of the
arithmetic into float64.
"""

import math

import numpy as np
from numba import cuda

from wd_teach.env import agent_id, env_id

FOUR_THIRDS = np.float32(4.0 / 3.0)


@cuda.jit
def cartpole_step(x, x_dot, theta, theta_dot, actions, obs, rewards, done, timestep,
                  episode_length, gravity, mass_pole, total_mass, half_pole_length,
                  polemass_length, force, tau, x_threshold, theta_threshold, num_agents):
    env = env_id()
    agent = agent_id()
    if agent >= num_agents:
        return
    i = (env, agent)
    push = force if actions[i] == 1 else -force
    costheta = np.float32(math.cos(theta[i]))
    sintheta = np.float32(math.sin(theta[i]))

    temp = (push + polemass_length * (theta_dot[i] * theta_dot[i]) * sintheta) / total_mass

    thetaacc = (gravity * sintheta - costheta * temp) / (
        half_pole_length * (FOUR_THIRDS - mass_pole * (costheta * costheta) / total_mass))
    xacc = temp - polemass_length * thetaacc * costheta / total_mass

    x[i] = x[i] + tau * x_dot[i]  # Euler: every update reads the state before the step
    x_dot[i] = x_dot[i] + tau * xacc
    theta[i] = theta[i] + tau * theta_dot[i]
    theta_dot[i] = theta_dot[i] + tau * thetaacc

    fallen = x[i] < -x_threshold or x[i] > x_threshold or theta[i] < -theta_threshold or (
        theta[i] > theta_threshold)
    rewards[i] = np.float32(1.0)
    t = timestep[env] + 1
    timestep[env] = t
    done[env] = fallen or t >= episode_length
    o = obs[env, agent]
    o[0] = x[i]
    o[1] = x_dot[i]
    o[2] = theta[i]
    o[3] = theta_dot[i]
