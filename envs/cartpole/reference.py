"""CartPole's step in NumPy over all environments at once: the twin of step.cu and
step_numba.py, operation for operation in float32."""

import numpy as np

from wd_teach.env import cos32, sin32

FOUR_THIRDS = np.float32(4.0 / 3.0)


def step(x, x_dot, theta, theta_dot, actions, obs, rewards, done, timestep, episode_length,
         gravity, mass_pole, total_mass, half_pole_length, polemass_length, force, tau,
         x_threshold, theta_threshold):
    push = np.where(actions == 1, force, -force)
    costheta = cos32(theta)
    sintheta = sin32(theta)

    temp = (push + polemass_length * (theta_dot * theta_dot) * sintheta) / total_mass
    thetaacc = (gravity * sintheta - costheta * temp) / (
        half_pole_length * (FOUR_THIRDS - mass_pole * (costheta * costheta) / total_mass))
    xacc = temp - polemass_length * thetaacc * costheta / total_mass

    x += tau * x_dot  # Euler: every update reads the state before the step
    x_dot += tau * xacc
    theta += tau * theta_dot
    theta_dot += tau * thetaacc

    fallen = (x < -x_threshold) | (x > x_threshold) | (theta < -theta_threshold) | (
        theta > theta_threshold)
    rewards[:] = 1.0
    timestep += 1
    done[:] = (fallen[:, 0] | (timestep >= episode_length)).astype(np.int32)
    obs[...] = np.stack([x, x_dot, theta, theta_dot], axis=-1)
