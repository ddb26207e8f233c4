"""Speaker and listener in Numba: the twin of step.cu, line for line. Numba sees the arrays
with their shapes, so it indexes [env, k] where C works out env * NUM_LANDMARKS + k."""

import numpy as np
from numba import cuda

from wd_teach.env import agent_id, env_id

NUM_LANDMARKS = 5
OBS_WIDTH = 2 + 3 * NUM_LANDMARKS  # the store's obs row: the listener's size
SPEAKER = 0


@cuda.jit
def speaker_listener_act(actions, word, listener_x, listener_y, move_x, move_y, done,
                         timestep, grid_size, episode_length, num_agents):
    env = env_id()
    agent = agent_id()
    if agent >= num_agents:
        return
    action = actions[env, agent]
    if agent == SPEAKER:
        word[env] = action
        t = timestep[env] + 1
        timestep[env] = t
        done[env] = t >= episode_length
    else:
        listener_x[env] = min(max(listener_x[env] + move_x[action], 0), grid_size - 1)
        listener_y[env] = min(max(listener_y[env] + move_y[action], 0), grid_size - 1)


@cuda.jit
def speaker_listener_observe(landmark_x, landmark_y, goal, listener_x, listener_y, word, obs,
                             rewards, cell_scale, reward_scale, num_agents):
    env = env_id()
    agent = agent_id()
    if agent >= num_agents:
        return
    o = obs[env, agent]
    x = listener_x[env]
    y = listener_y[env]
    g = goal[env]
    if agent == SPEAKER:
        for k in range(OBS_WIDTH):
            o[k] = np.float32(0.0)
        o[g] = np.float32(1.0)
    else:
        o[0] = np.float32(x) / cell_scale
        o[1] = np.float32(y) / cell_scale
        for k in range(NUM_LANDMARKS):
            o[2 + 2 * k] = np.float32(landmark_x[env, k] - x) / cell_scale
            o[3 + 2 * k] = np.float32(landmark_y[env, k] - y) / cell_scale
        for k in range(NUM_LANDMARKS):
            o[2 + 2 * NUM_LANDMARKS + k] = np.float32(0.0)
        w = word[env]
        if w >= 0:
            o[2 + 2 * NUM_LANDMARKS + w] = np.float32(1.0)
    distance = abs(x - landmark_x[env, g]) + abs(y - landmark_y[env, g])
    rewards[env, agent] = -np.float32(distance) / reward_scale
