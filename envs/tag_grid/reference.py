"""Tag on a grid in NumPy, all environments at once: the twin of step.cu and step_numba.py
(the shared parts are in envs/_tag/tag_reference.py)."""

import numpy as np

from wd_teach_envs._tag import tag_reference


def move(loc_x, loc_y, in_game, actions, rewards, timestep, move_x, move_y, num_taggers,
         field_size, tagger_step_reward, runner_step_reward, edge_penalty):
    """One cell up, down, left or right, or stay; not past the edge. The step's first
    rewards."""
    timestep += 1
    playing = in_game != 0
    x = loc_x + move_x[actions].astype(np.float32)
    y = loc_y + move_y[actions].astype(np.float32)
    hit = (x < 0) | (x > field_size) | (y < 0) | (y > field_size)
    x = np.minimum(np.maximum(x, np.float32(0)), field_size)
    y = np.minimum(np.maximum(y, np.float32(0)), field_size)
    loc_x[playing] = x[playing]  # agents out of the game stay where they are
    loc_y[playing] = y[playing]
    reward = np.where(np.arange(loc_x.shape[1]) < num_taggers, tagger_step_reward,
                      runner_step_reward).astype(np.float32)
    reward = np.where(hit, reward + edge_penalty, reward)
    rewards[...] = np.where(playing, reward, np.float32(0))


def observe(loc_x, loc_y, in_game, obs, nearest, num_taggers, num_neighbors,
            full_observation, search_grid, own_size, field_size, slots=None):
    """Every agent's observation: the shared position features, for its own block and for
    each neighbour slot, and which agent each slot shows (nearest). One search whatever
    search_grid says: the kernels' two searches find the same slots. `slots`: the
    neighbours, where the caller has found them already."""
    if slots is None:
        slots = tag_reference.neighbors(loc_x, loc_y, in_game, num_neighbors, full_observation)
    nearest[...] = tag_reference.observe_positions(obs, slots, loc_x, loc_y, in_game,
                                                   num_taggers, field_size, own_size)


def step(loc_x, loc_y, in_game, actions, obs, nearest, rewards, done, timestep, runners_left,
         move_x, move_y, num_taggers, num_neighbors, full_observation, search_grid, own_size,
         field_size, tagging_distance, tagger_step_reward, runner_step_reward, edge_penalty,
         tag_reward, tag_penalty, runner_exits, taggers_needed, episode_length, end_reward):
    move(loc_x, loc_y, in_game, actions, rewards, timestep, move_x, move_y, num_taggers,
         field_size, tagger_step_reward, runner_step_reward, edge_penalty)
    tag_reference.catch(loc_x, loc_y, in_game, rewards, runners_left, num_taggers,
                        tagging_distance, tag_reward, tag_penalty, runner_exits, taggers_needed)
    observe(loc_x, loc_y, in_game, obs, nearest, num_taggers, num_neighbors, full_observation,
            search_grid, own_size, field_size)
    tag_reference.end_game(in_game, rewards, done, timestep, runners_left, num_taggers,
                           episode_length, end_reward)
