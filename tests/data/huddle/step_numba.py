"""Huddle's step in Numba: the twin of step.cu, line for line."""

import numpy as np
from numba import cuda, float32

from wd_teach.numba_index import agent_id, env_id

MAX_AGENTS = 1024  # one block: the most threads a block holds


@cuda.jit
def huddle_step(pos, actions, obs, rewards, done, timestep, episode_length, length, step_size,
                num_agents):
    moved = cuda.shared.array(MAX_AGENTS, float32)  # this environment's positions after the move
    env = env_id()
    agent = agent_id()
    # No early return: every thread of the block must reach the barrier below.
    active = agent < num_agents
    if active:
        step = np.float32(actions[env, agent] - 1) * step_size
        pos[env, agent] = min(max(pos[env, agent] + step, np.float32(0.0)), length)
        moved[agent] = pos[env, agent]
    cuda.syncthreads()  # every agent has moved before any agent reads the others
    if active:
        total = np.float32(0.0)
        for other in range(num_agents):
            total += moved[other]
        centre = total / np.float32(num_agents)
        rewards[env, agent] = -abs(centre - pos[env, agent]) / length
        obs[env, agent, 0] = pos[env, agent] / length
        obs[env, agent, 1] = (centre - pos[env, agent]) / length
    if agent == 0:
        t = timestep[env] + 1
        timestep[env] = t
        done[env] = t >= episode_length
