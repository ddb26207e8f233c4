"""Pendulum's step in NumPy over all environments at once: the twin of step.cu and
step_numba.py, operation for operation in float32."""

import numpy as np

from wd_teach.env import cos32, sin32

PI = np.float32(np.pi)
TWO_PI = np.float32(2 * np.pi)
SPEED_COST = np.float32(0.1)
TORQUE_COST = np.float32(0.001)


def angle_normalize(angle):
    """The angle moved into [-pi, pi): fmod is exact in float32, then one add."""
    turned = np.fmod(angle + PI, TWO_PI)
    return np.where(turned < 0, turned + TWO_PI, turned) - PI


def observe(theta, theta_dot, obs):
    obs[..., 0] = cos32(theta)
    obs[..., 1] = sin32(theta)
    obs[..., 2] = theta_dot


def step(theta, theta_dot, actions, obs, rewards, done, timestep, episode_length, max_speed,
         max_torque, dt, gravity_term, torque_term):
    torque = np.clip(actions[..., 0], -max_torque, max_torque)
    upright = angle_normalize(theta)
    costs = upright * upright + SPEED_COST * (theta_dot * theta_dot) + TORQUE_COST * (
        torque * torque)

    speed = theta_dot + (gravity_term * sin32(theta) + torque_term * torque) * dt
    speed = np.clip(speed, -max_speed, max_speed)
    theta += speed * dt
    theta_dot[...] = speed

    rewards[...] = -costs
    timestep += 1
    done[:] = (timestep >= episode_length).astype(np.int32)
    observe(theta, theta_dot, obs)
