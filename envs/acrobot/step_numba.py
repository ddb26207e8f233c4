"""Acrobot's step in Numba: the twin of step.cu, line for line. A state is a tuple of four
float32 (theta1, theta2, dtheta1, dtheta2), and so is its rate of change.

Transcendentals are cast with np.float32(...): on a GPU math.cos of a float32 is already
float32 (cosf), on the simulator it is a Python float, which would turn the rest of the
arithmetic into float64.
"""

import math

import numpy as np
from numba import cuda

from wd_teach.env import agent_id, env_id

PI = np.float32(math.pi)
TWO_PI = np.float32(2 * math.pi)
HALF_PI = np.float32(math.pi / 2)
HALF = np.float32(0.5)
TWO = np.float32(2.0)
SIX = np.float32(6.0)
ONE = np.float32(1.0)


@cuda.jit(device=True)
def derivative(s, torque, dynamics):
    """The rate of change of the state s: gymnasium's book equations of the two links."""
    theta1, theta2, dtheta1, dtheta2 = s
    d1_base, d2_base, coupling, phi1_term, phi2_term = dynamics
    cos2 = np.float32(math.cos(theta2))
    sin2 = np.float32(math.sin(theta2))
    d1 = d1_base + TWO * coupling * cos2
    d2 = d2_base + coupling * cos2
    phi2 = phi2_term * np.float32(math.cos(theta1 + theta2 - HALF_PI))
    phi1 = (-coupling * (dtheta2 * dtheta2) * sin2 - TWO * coupling * dtheta2 * dtheta1 * sin2
            + phi1_term * np.float32(math.cos(theta1 - HALF_PI)) + phi2)
    ddtheta2 = (torque + d2 / d1 * phi1 - coupling * (dtheta1 * dtheta1) * sin2 - phi2) / (
        d2_base - d2 * d2 / d1)
    ddtheta1 = -(d2 * ddtheta2 + phi1) / d1
    return dtheta1, dtheta2, ddtheta1, ddtheta2


@cuda.jit(device=True)
def moved(s, k, h):
    """s + h * k, one variable at a time: the trial state of a Runge-Kutta stage."""
    return s[0] + h * k[0], s[1] + h * k[1], s[2] + h * k[2], s[3] + h * k[3]


@cuda.jit(device=True)
def rk4_sum(y, k1, k2, k3, k4, sixth):
    return y + sixth * (k1 + TWO * k2 + TWO * k3 + k4)


@cuda.jit(device=True)
def rk4(s, torque, dt, dynamics):
    """One classic Runge-Kutta step of dt: four slopes, weighted 1, 2, 2, 1."""
    half = HALF * dt
    k1 = derivative(s, torque, dynamics)
    k2 = derivative(moved(s, k1, half), torque, dynamics)
    k3 = derivative(moved(s, k2, half), torque, dynamics)
    k4 = derivative(moved(s, k3, dt), torque, dynamics)
    sixth = dt / SIX
    return (rk4_sum(s[0], k1[0], k2[0], k3[0], k4[0], sixth),
            rk4_sum(s[1], k1[1], k2[1], k3[1], k4[1], sixth),
            rk4_sum(s[2], k1[2], k2[2], k3[2], k4[2], sixth),
            rk4_sum(s[3], k1[3], k2[3], k3[3], k4[3], sixth))


@cuda.jit(device=True)
def wrap(angle):
    """The angle moved into [-pi, pi] by whole turns, one at a time (as gymnasium does)."""
    while angle > PI:
        angle = angle - TWO_PI
    while angle < -PI:
        angle = angle + TWO_PI
    return angle


@cuda.jit(device=True)
def observe(theta1, theta2, dtheta1, dtheta2, o):
    o[0] = np.float32(math.cos(theta1))
    o[1] = np.float32(math.sin(theta1))
    o[2] = np.float32(math.cos(theta2))
    o[3] = np.float32(math.sin(theta2))
    o[4] = dtheta1
    o[5] = dtheta2


@cuda.jit
def acrobot_step(theta1, theta2, dtheta1, dtheta2, actions, obs, rewards, done, timestep,
                 episode_length, dt, max_vel_1, max_vel_2, d1_base, d2_base, coupling,
                 phi1_term, phi2_term, num_agents):
    env = env_id()
    agent = agent_id()
    if agent >= num_agents:
        return
    i = (env, agent)
    torque = np.float32(actions[i] - 1)  # -1, 0 or +1
    dynamics = (d1_base, d2_base, coupling, phi1_term, phi2_term)
    s = rk4((theta1[i], theta2[i], dtheta1[i], dtheta2[i]), torque, dt, dynamics)
    theta1[i] = wrap(s[0])
    theta2[i] = wrap(s[1])
    dtheta1[i] = min(max(s[2], -max_vel_1), max_vel_1)
    dtheta2[i] = min(max(s[3], -max_vel_2), max_vel_2)

    # The tip above the line: one link's length above the shoulder.
    up = -np.float32(math.cos(theta1[i])) - np.float32(math.cos(theta2[i] + theta1[i])) > ONE
    rewards[i] = np.float32(0.0) if up else np.float32(-1.0)
    t = timestep[env] + 1
    timestep[env] = t
    done[env] = up or t >= episode_length
    observe(theta1[i], theta2[i], dtheta1[i], dtheta2[i], obs[env, agent])
