"""Tag on a grid, in Numba: the twin of step.cu, line for line. The catch between move and
observe is tag_catch in envs/_tag/tag_numba.py."""

import numpy as np
from numba import cuda, float32, int32

from wd_teach.env import agent_id, env_id
from wd_teach_envs._tag.nearest_numba import (  # noqa: F401  (loaded with this module:
    tag_nearest_grid,  # the grid search, launched before the observe with search="grid")
)
from wd_teach_envs._tag.tag_numba import (
    MAX_NEAREST,
    TILE,
    clear,
    end_game,
    find_nearest,
    neighbor,
    observe_kernel,
    observe_neighbor,
    observe_self,
    read_found,
    tag_catch,  # noqa: F401  (loaded with this module: the step's middle kernel)
)


@cuda.jit
def tag_grid_move(loc_x, loc_y, in_game, actions, rewards, timestep, move_x, move_y,
                  num_agents, num_taggers, field_size, tagger_step_reward, runner_step_reward,
                  edge_penalty):
    """One cell up, down, left or right, or stay; not past the edge. The step's first
    rewards."""
    env = env_id()
    agent = agent_id()
    if agent >= num_agents:
        return
    if agent == 0:
        timestep[env] = timestep[env] + 1
    i = (env, agent)
    if in_game[i] == 0:
        rewards[i] = np.float32(0.0)
        return
    x = loc_x[i] + np.float32(move_x[actions[i]])
    y = loc_y[i] + np.float32(move_y[actions[i]])
    hit = x < np.float32(0.0) or x > field_size or y < np.float32(0.0) or y > field_size
    loc_x[i] = min(max(x, np.float32(0.0)), field_size)
    loc_y[i] = min(max(y, np.float32(0.0)), field_size)
    reward = tagger_step_reward if agent < num_taggers else runner_step_reward
    if hit:
        reward = reward + edge_penalty
    rewards[i] = reward


@observe_kernel
def tag_grid_observe(loc_x, loc_y, in_game, obs, nearest, rewards, done, timestep,
                     runners_left, num_agents, num_taggers, num_neighbors, full_observation,
                     search_grid, obs_size, own_size, episode_length, field_size, end_reward):
    """Every agent's observation: the shared position features, for its own block and for
    each neighbour slot, and which agent each slot shows (nearest). The nearest are found
    here, or (search_grid) were found by tag_nearest_grid just before. Then the end of the
    game."""
    tile_x = cuda.shared.array(TILE, float32)
    tile_y = cuda.shared.array(TILE, float32)
    tile_in = cuda.shared.array(TILE, int32)
    found = cuda.local.array(MAX_NEAREST, int32)
    env = env_id()
    agent = agent_id()
    active = agent < num_agents
    if not full_observation and not search_grid:
        find_nearest(loc_x, loc_y, in_game, env, agent, active, num_agents, num_neighbors,
                     tile_x, tile_y, tile_in, found)
    if not active:
        return
    i = (env, agent)
    shown = nearest[env, agent]
    if not full_observation and search_grid:
        read_found(shown, num_neighbors, found)
    o = obs[env, agent]
    observe_self(o, loc_x[i], loc_y[i], field_size, agent >= num_taggers, in_game[i])
    k = 0
    while k < num_neighbors:  # while, not range: envs/_tag/tag_numba.py says why
        n = o[own_size * (k + 1):]  # C's o + own_size * (k + 1): one bound to check, not two
        other = neighbor(k, agent, full_observation, found)
        j = (env, other if other >= 0 else 0)
        if other < 0 or in_game[j] == 0:  # an else where C has `continue`: keeps the k += 1
            clear(n, own_size)
            shown[k] = -1
        else:
            shown[k] = other
            observe_neighbor(n, loc_x[j] - loc_x[i], loc_y[j] - loc_y[i], field_size,
                             other >= num_taggers)
        k += 1
    end_game(env, agent, agent >= num_taggers, in_game, rewards, done, timestep, runners_left,
             episode_length, end_reward)
