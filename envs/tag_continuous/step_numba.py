"""Tag on a continuous field, in Numba: the twin of step.cu, line for line. The catch
between move and observe is tag_catch in envs/_tag/tag_numba.py."""

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
    mul,
    neighbor,
    observe_kernel,
    observe_neighbor,
    observe_self,
    read_found,
    tag_catch,  # noqa: F401  (loaded with this module: the step's middle kernel)
)

OWN_FEATURES = 4  # observe_self writes these, this game the three after them


@cuda.jit(device=True)
def max_speed_of(agent, num_taggers, tagger_max_speed, runner_max_speed):
    return tagger_max_speed if agent < num_taggers else runner_max_speed


@cuda.jit
def tag_continuous_move(loc_x, loc_y, speed, heading, in_game, actions, rewards, timestep,
                        accelerations, turns, direction_x, direction_y, num_agents,
                        num_taggers, num_directions, field_size, tagger_max_speed,
                        runner_max_speed, tagger_step_reward, runner_step_reward,
                        edge_penalty):
    """Turn, speed up or slow down, move; stop at the field's edge. The step's first
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
    accelerate = actions[env, agent, 0]
    turn = actions[env, agent, 1]
    h = (heading[i] + turns[turn] + num_directions) % num_directions
    top = max_speed_of(agent, num_taggers, tagger_max_speed, runner_max_speed)
    v = min(max(speed[i] + accelerations[accelerate], np.float32(0.0)), top)
    x = loc_x[i] + mul(v, direction_x[h])
    y = loc_y[i] + mul(v, direction_y[h])
    hit = x < np.float32(0.0) or x > field_size or y < np.float32(0.0) or y > field_size
    x = min(max(x, np.float32(0.0)), field_size)
    y = min(max(y, np.float32(0.0)), field_size)
    if hit:
        v = np.float32(0.0)  # the edge stops you
    heading[i] = h
    speed[i] = v
    loc_x[i] = x
    loc_y[i] = y
    reward = tagger_step_reward if agent < num_taggers else runner_step_reward
    if hit:
        reward = reward + edge_penalty
    rewards[i] = reward


@observe_kernel
def tag_continuous_observe(loc_x, loc_y, speed, heading, in_game, obs, nearest, rewards,
                           done, timestep, runners_left, direction_x, direction_y, num_agents,
                           num_taggers, num_neighbors, full_observation, search_grid,
                           obs_size, own_size, episode_length, field_size, tagger_max_speed,
                           runner_max_speed, end_reward):
    """Every agent's observation: the shared position features, then speed and heading;
    for its own block and for each neighbour slot, and which agent each slot shows
    (nearest). The nearest are found here, or (search_grid) were found by tag_nearest_grid
    just before. Then the end of the game."""
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
    o[OWN_FEATURES + 0] = speed[i] / max_speed_of(agent, num_taggers, tagger_max_speed,
                                                  runner_max_speed)
    o[OWN_FEATURES + 1] = direction_x[heading[i]]
    o[OWN_FEATURES + 2] = direction_y[heading[i]]
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
            n[OWN_FEATURES + 0] = speed[j] / max_speed_of(other, num_taggers, tagger_max_speed,
                                                          runner_max_speed)
            n[OWN_FEATURES + 1] = direction_x[heading[j]]
            n[OWN_FEATURES + 2] = direction_y[heading[j]]
        k += 1
    end_game(env, agent, agent >= num_taggers, in_game, rewards, done, timestep, runners_left,
             episode_length, end_reward)
