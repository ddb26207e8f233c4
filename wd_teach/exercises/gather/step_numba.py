"""Gather's step in Numba: the twin of step.cu, line for line."""

import numpy as np
from numba import cuda

from wd_teach.env import agent_id, env_id


@cuda.jit(device=True)
def group_centre(pos, env, num_agents):
    """The centre of environment `env`: positions added in index order, then divided."""
    total = np.float32(0.0)
    for other in range(num_agents):
        total += pos[env, other]
    return total / np.float32(num_agents)


@cuda.jit
def gather_step(pos, moves, actions, obs, rewards, done, timestep, episode_length, length,
                num_agents):
    env = env_id()
    agent = agent_id()
    # No early return: every thread of the block must reach the barrier below.
    active = agent < num_agents
    i = (env, agent)
    if active:  # 1. move: each agent writes only its own position
        pos[i] = min(max(pos[i] + moves[actions[i]], np.float32(0.0)), length)
    cuda.syncthreads()  # 2. wait: every agent of the block has moved
    if active:  # 3. read: every agent reads every new position
        centre = group_centre(pos, env, num_agents)
        rewards[i] = -abs(centre - pos[i]) / length
        obs[env, agent, 0] = pos[i] / length
        obs[env, agent, 1] = (centre - pos[i]) / length
    if agent == 0:  # one thread per environment counts the step
        t = timestep[env] + 1
        timestep[env] = t
        done[env] = t >= episode_length
