"""Tag on a continuous field in NumPy, all environments at once: the twin of step.cu and
step_numba.py, rounding for rounding (the shared parts are in envs/_tag/tag_reference.py)."""

import numpy as np

from wd_teach_envs._tag import tag_reference

OWN_FEATURES = 4  # observe_positions writes these, this game the three after them


def max_speed_of(num_agents, num_taggers, tagger_max_speed, runner_max_speed):
    """Each agent's top speed, [agents]."""
    return np.where(np.arange(num_agents) < num_taggers, tagger_max_speed,
                    runner_max_speed).astype(np.float32)


def move(loc_x, loc_y, speed, heading, in_game, actions, rewards, timestep, accelerations,
         turns, direction_x, direction_y, num_taggers, num_directions, field_size,
         tagger_max_speed, runner_max_speed, tagger_step_reward, runner_step_reward,
         edge_penalty):
    """Turn, speed up or slow down, move; stop at the field's edge. The step's first
    rewards."""
    timestep += 1
    playing = in_game != 0
    h = (heading + turns[actions[..., 1]] + num_directions) % num_directions
    top = max_speed_of(loc_x.shape[1], num_taggers, tagger_max_speed, runner_max_speed)
    v = np.minimum(np.maximum(speed + accelerations[actions[..., 0]], np.float32(0)), top)
    x = loc_x + v * direction_x[h]
    y = loc_y + v * direction_y[h]
    hit = (x < 0) | (x > field_size) | (y < 0) | (y > field_size)
    x = np.minimum(np.maximum(x, np.float32(0)), field_size)
    y = np.minimum(np.maximum(y, np.float32(0)), field_size)
    v = np.where(hit, np.float32(0), v)  # the edge stops you
    for array, new in ((heading, h), (speed, v), (loc_x, x), (loc_y, y)):
        array[playing] = new[playing]  # agents out of the game stay where they are
    reward = np.where(np.arange(loc_x.shape[1]) < num_taggers, tagger_step_reward,
                      runner_step_reward).astype(np.float32)
    reward = np.where(hit, reward + edge_penalty, reward)
    rewards[...] = np.where(playing, reward, np.float32(0))


def observe(loc_x, loc_y, speed, heading, in_game, obs, nearest, direction_x, direction_y,
            num_taggers, num_neighbors, full_observation, search_grid, own_size, field_size,
            tagger_max_speed, runner_max_speed, slots=None):
    """Every agent's observation: the shared position features, then speed and heading;
    for its own block and for each neighbour slot, and which agent each slot shows
    (nearest). One search whatever search_grid says: the kernels' two searches find the
    same slots. `slots`: the neighbours, where the caller has found them already."""
    if slots is None:
        slots = tag_reference.neighbors(loc_x, loc_y, in_game, num_neighbors, full_observation)
    slots = tag_reference.observe_positions(obs, slots, loc_x, loc_y, in_game, num_taggers,
                                            field_size, own_size)
    nearest[...] = slots
    top = max_speed_of(loc_x.shape[1], num_taggers, tagger_max_speed, runner_max_speed)
    obs[..., OWN_FEATURES + 0] = speed / top
    obs[..., OWN_FEATURES + 1] = direction_x[heading]
    obs[..., OWN_FEATURES + 2] = direction_y[heading]
    n = obs.reshape(*slots.shape[:2], -1, own_size)[:, :, 1:]  # the slots, a view
    n[..., OWN_FEATURES + 0] = tag_reference.gather(speed / top, slots)
    n[..., OWN_FEATURES + 1] = tag_reference.gather(direction_x[heading], slots)
    n[..., OWN_FEATURES + 2] = tag_reference.gather(direction_y[heading], slots)


def step(loc_x, loc_y, speed, heading, in_game, actions, obs, nearest, rewards, done,
         timestep, runners_left, accelerations, turns, direction_x, direction_y, num_taggers,
         num_neighbors, full_observation, search_grid, own_size, num_directions, field_size,
         tagging_distance, tagger_max_speed, runner_max_speed, tagger_step_reward,
         runner_step_reward, edge_penalty, tag_reward, tag_penalty, runner_exits,
         taggers_needed, episode_length, end_reward):
    move(loc_x, loc_y, speed, heading, in_game, actions, rewards, timestep, accelerations,
         turns, direction_x, direction_y, num_taggers, num_directions, field_size,
         tagger_max_speed, runner_max_speed, tagger_step_reward, runner_step_reward,
         edge_penalty)
    tag_reference.catch(loc_x, loc_y, in_game, rewards, runners_left, num_taggers,
                        tagging_distance, tag_reward, tag_penalty, runner_exits, taggers_needed)
    observe(loc_x, loc_y, speed, heading, in_game, obs, nearest, direction_x, direction_y,
            num_taggers, num_neighbors, full_observation, search_grid, own_size, field_size,
            tagger_max_speed, runner_max_speed)
    tag_reference.end_game(in_game, rewards, done, timestep, runners_left, num_taggers,
                           episode_length, end_reward)
