"""Speaker and listener in NumPy over all environments at once: the twin of step.cu and
step_numba.py. Everything is whole numbers but the observations and the reward, each one
float32 division of a whole number, which every backend rounds the same."""

import numpy as np

NUM_LANDMARKS = 5
SPEAKER, LISTENER = 0, 1


def act(actions, word, listener_x, listener_y, move_x, move_y, done, timestep, grid_size,
        episode_length):
    """The speaker's word, the listener's move (kept on the grid), the clock."""
    word[:] = actions[:, SPEAKER]
    move = actions[:, LISTENER]
    listener_x[:] = np.clip(listener_x + move_x[move], 0, grid_size - 1)
    listener_y[:] = np.clip(listener_y + move_y[move], 0, grid_size - 1)
    timestep += 1
    done[:] = (timestep >= episode_length).astype(np.int32)


def observe(landmark_x, landmark_y, goal, listener_x, listener_y, word, obs, rewards,
            cell_scale, reward_scale):
    """Both observations (the speaker's in its row's first columns), and the shared reward."""
    envs = np.arange(len(goal))
    obs[:, SPEAKER, :] = 0
    obs[envs, SPEAKER, goal] = 1
    listener = obs[:, LISTENER]
    listener[:, 0] = listener_x.astype(np.float32) / cell_scale
    listener[:, 1] = listener_y.astype(np.float32) / cell_scale
    dx = (landmark_x - listener_x[:, None]).astype(np.float32) / cell_scale
    dy = (landmark_y - listener_y[:, None]).astype(np.float32) / cell_scale
    listener[:, 2:2 + 2 * NUM_LANDMARKS:2] = dx
    listener[:, 3:3 + 2 * NUM_LANDMARKS:2] = dy
    heard = listener[:, 2 + 2 * NUM_LANDMARKS:]
    heard[:] = 0
    said = word >= 0
    heard[envs[said], word[said]] = 1
    distance = (np.abs(listener_x - landmark_x[envs, goal])
                + np.abs(listener_y - landmark_y[envs, goal]))
    rewards[:] = (-(distance.astype(np.float32)) / reward_scale)[:, None]


def step(actions, word, listener_x, listener_y, move_x, move_y, done, timestep, grid_size,
         episode_length, landmark_x, landmark_y, goal, obs, rewards, cell_scale,
         reward_scale):
    act(actions, word, listener_x, listener_y, move_x, move_y, done, timestep, grid_size,
        episode_length)
    observe(landmark_x, landmark_y, goal, listener_x, listener_y, word, obs, rewards,
            cell_scale, reward_scale)
