"""Acrobot's step in NumPy over all environments at once: the twin of step.cu and
step_numba.py, operation for operation in float32. A state is a tuple of four arrays
(theta1, theta2, dtheta1, dtheta2), and so is its rate of change."""

import numpy as np

from wd_teach.env import cos32, sin32

PI = np.float32(np.pi)
TWO_PI = np.float32(2 * np.pi)
HALF_PI = np.float32(np.pi / 2)
HALF = np.float32(0.5)
TWO = np.float32(2.0)
SIX = np.float32(6.0)
ONE = np.float32(1.0)


def derivative(s, torque, dynamics):
    """The rate of change of the state s: gymnasium's book equations of the two links."""
    theta1, theta2, dtheta1, dtheta2 = s
    d1_base, d2_base, coupling, phi1_term, phi2_term = dynamics
    cos2 = cos32(theta2)
    sin2 = sin32(theta2)
    d1 = d1_base + TWO * coupling * cos2
    d2 = d2_base + coupling * cos2
    phi2 = phi2_term * cos32(theta1 + theta2 - HALF_PI)
    phi1 = (-coupling * (dtheta2 * dtheta2) * sin2 - TWO * coupling * dtheta2 * dtheta1 * sin2
            + phi1_term * cos32(theta1 - HALF_PI) + phi2)
    ddtheta2 = (torque + d2 / d1 * phi1 - coupling * (dtheta1 * dtheta1) * sin2 - phi2) / (
        d2_base - d2 * d2 / d1)
    ddtheta1 = -(d2 * ddtheta2 + phi1) / d1
    return dtheta1, dtheta2, ddtheta1, ddtheta2


def moved(s, k, h):
    """s + h * k, one variable at a time: the trial state of a Runge-Kutta stage."""
    return s[0] + h * k[0], s[1] + h * k[1], s[2] + h * k[2], s[3] + h * k[3]


def rk4_sum(y, k1, k2, k3, k4, sixth):
    return y + sixth * (k1 + TWO * k2 + TWO * k3 + k4)


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


def wrap(angle):
    """The angle moved into [-pi, pi] by whole turns, one at a time (as gymnasium does)."""
    angle = angle.copy()
    while np.any(angle > PI):
        angle = np.where(angle > PI, angle - TWO_PI, angle)
    while np.any(angle < -PI):
        angle = np.where(angle < -PI, angle + TWO_PI, angle)
    return angle


def observe(theta1, theta2, dtheta1, dtheta2, obs):
    obs[..., 0] = cos32(theta1)
    obs[..., 1] = sin32(theta1)
    obs[..., 2] = cos32(theta2)
    obs[..., 3] = sin32(theta2)
    obs[..., 4] = dtheta1
    obs[..., 5] = dtheta2


def step(theta1, theta2, dtheta1, dtheta2, actions, obs, rewards, done, timestep,
         episode_length, dt, max_vel_1, max_vel_2, d1_base, d2_base, coupling, phi1_term,
         phi2_term):
    torque = (actions - 1).astype(np.float32)  # -1, 0 or +1
    dynamics = (d1_base, d2_base, coupling, phi1_term, phi2_term)
    s = rk4((theta1, theta2, dtheta1, dtheta2), torque, dt, dynamics)
    theta1[...] = wrap(s[0])
    theta2[...] = wrap(s[1])
    dtheta1[...] = np.clip(s[2], -max_vel_1, max_vel_1)
    dtheta2[...] = np.clip(s[3], -max_vel_2, max_vel_2)

    # The tip above the line: one link's length above the shoulder.
    up = -cos32(theta1) - cos32(theta2 + theta1) > ONE
    rewards[...] = np.where(up, np.float32(0.0), np.float32(-1.0))
    timestep += 1
    done[:] = (up[:, 0] | (timestep >= episode_length)).astype(np.int32)
    observe(theta1, theta2, dtheta1, dtheta2, obs)
