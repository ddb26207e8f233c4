"""What the two Tag games share, in NumPy over all environments at once: the twin of
envs/_tag/tag.cuh and tag.cu, rounding for rounding.

Where a kernel loops over the other agents, this makes the whole [env, agent, other] table
at once. Products and sums of float32 arrays are rounded one by one, as the kernels' tag_mul
keeps them, so the results agree bit for bit.
"""

import numpy as np


def distance2(dx, dy):
    return dx * dx + dy * dy


def catch(loc_x, loc_y, in_game, rewards, runners_left, num_taggers, tagging_distance,
          tag_reward, tag_penalty, runner_exits, taggers_needed=1):
    """Each runner still in the game is caught when at least taggers_needed taggers are
    within tagging_distance: tag_penalty to the runner, and it leaves if runner_exits.
    tag_reward goes to the nearest of them (the lower index of two at the same distance)
    when one is needed, or to each of them when the catch takes several."""
    taggers, runners = slice(0, num_taggers), slice(num_taggers, None)
    dx = loc_x[:, None, taggers] - loc_x[:, runners, None]  # [env, runner, tagger]
    dy = loc_y[:, None, taggers] - loc_y[:, runners, None]
    d2 = distance2(dx, dy)
    reach2 = tagging_distance * tagging_distance
    close = (d2 <= reach2) & (in_game[:, None, taggers] != 0) & (in_game[:, runners, None] != 0)
    caught = close.sum(axis=2) >= taggers_needed  # [env, runner]
    envs, runner = np.nonzero(caught)
    rewards[envs, num_taggers + runner] += tag_penalty
    if taggers_needed == 1:
        nearest = np.where(close, d2, np.inf).argmin(axis=2)  # the first of equals, as the kernel
        np.add.at(rewards, (envs, nearest[envs, runner]), tag_reward)  # one add per catch
    else:
        in_catch, _, tagger = np.nonzero(close & caught[:, :, None])
        np.add.at(rewards, (in_catch, tagger), tag_reward)  # one add per tagger of each catch
    if runner_exits:
        in_game[envs, num_taggers + runner] = 0
        runners_left -= caught.sum(axis=1, dtype=np.int32)


#: About how many [agent, other] distances are made at once: the table of a game of 1,000
#: agents in 2,000 envs would be 2e9 of them (8 GB, and more for the sort), so neighbors()
#: takes the envs a slice at a time.
TABLE_SIZE = 1 << 24


def neighbors(loc_x, loc_y, in_game, num_neighbors, full_observation):
    """[env, agent, slot]: which agent fills each neighbour slot (-1: no one). The nearest
    others in the game, nearest first and the lower index first among equals; or, with full
    observation, every other agent in index order."""
    num_envs, num_agents = loc_x.shape
    if full_observation:
        others = np.array([[k if k < a else k + 1 for k in range(num_agents - 1)]
                           for a in range(num_agents)], dtype=np.int64).reshape(
                               num_agents, num_agents - 1)
        return np.broadcast_to(others, (num_envs, num_agents, num_agents - 1))
    slots = np.empty((num_envs, num_agents, num_neighbors), np.int64)
    step = max(1, TABLE_SIZE // (num_agents * num_agents))
    for start in range(0, num_envs, step):
        part = slice(start, start + step)
        slots[part] = nearest(loc_x[part], loc_y[part], in_game[part], num_neighbors)
    return slots


def nearest(loc_x, loc_y, in_game, num_neighbors):
    """neighbors() for a slice of envs: the whole [env, agent, other] table of distances,
    then each row's `num_neighbors` smallest, in order."""
    num_agents = loc_x.shape[1]
    dx = loc_x[:, None, :] - loc_x[:, :, None]  # [env, agent, other]: other minus me
    dy = loc_y[:, None, :] - loc_y[:, :, None]
    away = (in_game[:, None, :] == 0) | np.eye(num_agents, dtype=bool)
    d2 = np.where(away, np.inf, distance2(dx, dy))
    order = smallest_first(d2, num_neighbors)
    return np.where(np.take_along_axis(d2, order, axis=2) < np.inf, order, -1)


def smallest_first(d2, k):
    """The indices of each row's k smallest distances, smallest first and the lower index
    first among equals: np.argsort(d2, kind="stable")[..., :k], without sorting whole rows.

    A distance is a float32 of at least 0 (or infinity), and the bits of such floats, read
    as integers, sort as the floats do. So one int64 per entry, its distance's bits above its
    index, orders by distance and then by index, and no two are equal: argpartition finds
    the k smallest of those keys (a pass over the row, not a sort), and only they are
    sorted."""
    if d2.dtype != np.float32:  # another width's bits would not be these keys' order
        raise TypeError(f"smallest_first takes float32 distances, as the kernels make, not "
                        f"{d2.dtype}.")
    keys = np.ascontiguousarray(d2).view(np.int32).astype(np.int64)
    keys <<= 32  # in place: the table is the largest array here
    keys |= np.arange(d2.shape[-1], dtype=np.int64)
    if k < d2.shape[-1]:
        keys = np.partition(keys, k - 1, axis=-1)[..., :k]
    return np.sort(keys, axis=-1)[..., :k] & 0xFFFFFFFF


def gather(values, slots):
    """values[env, slots[env, agent, k]], and 0 where the slot is empty (-1)."""
    envs = np.arange(values.shape[0])[:, None, None]
    return np.where(slots >= 0, values[envs, np.maximum(slots, 0)], 0).astype(np.float32)


def observe_positions(obs, slots, loc_x, loc_y, in_game, num_taggers, field_size, own_size):
    """The features every Tag game shows: own place, type and presence, then each
    neighbour slot's presence, place relative to me and type. Empty slots are all zeros
    (the game's own features included)."""
    num_envs, num_agents = loc_x.shape
    is_runner = (np.arange(num_agents) >= num_taggers).astype(np.float32)
    obs[..., 0] = loc_x / field_size
    obs[..., 1] = loc_y / field_size
    obs[..., 2] = is_runner
    obs[..., 3] = in_game
    envs = np.arange(num_envs)[:, None, None]
    present = (slots >= 0) & (in_game[envs, np.maximum(slots, 0)] != 0)
    slots = np.where(present, slots, -1)
    neighbor = obs.reshape(num_envs, num_agents, -1, own_size)[:, :, 1:]  # a view
    neighbor[...] = 0
    neighbor[..., 0] = present
    neighbor[..., 1] = np.where(present, gather(loc_x, slots) - loc_x[..., None], 0) / field_size
    neighbor[..., 2] = np.where(present, gather(loc_y, slots) - loc_y[..., None], 0) / field_size
    neighbor[..., 3] = gather(np.broadcast_to(is_runner, loc_x.shape), slots)
    return slots


def end_game(in_game, rewards, done, timestep, runners_left, num_taggers, episode_length,
             end_reward):
    """Runners still playing when time is up get end_reward; the game is over when time is
    up or no runner is left."""
    time_up = timestep >= episode_length
    runners = rewards[:, num_taggers:]
    runners += np.where(time_up[:, None] & (in_game[:, num_taggers:] != 0), end_reward,
                        np.float32(0))
    done[:] = time_up | (runners_left == 0)
