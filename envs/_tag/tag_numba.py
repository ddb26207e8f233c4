"""What the two Tag games share, in Numba: the twin of envs/_tag/tag.cuh and tag.cu,
line for line. C has one namespace, so there every name carries a `tag_` prefix; here the
module is the prefix. C sees arrays as flat pointers, Numba with their shape, so the C
functions take num_agents (and the slot i) where Numba indexes [env, agent].

`mul` is a product that the compiler never fuses with an add into one fma (libdevice's
fmul_rn on a GPU; on the simulator every product is rounded on its own anyway), so positions
and distances come out bit for bit as in NumPy. tag.cuh says why that matters.
"""

import numpy as np
from numba import cuda, float32, int32

from wd_teach._simulator import simulator_on
from wd_teach.numba_index import agent_id, env_id

TILE = 128  # agents staged in shared memory at a time
MAX_NEAREST = 32  # the most neighbours an agent can see by distance

if simulator_on():

    @cuda.jit(device=True)
    def mul(a, b):
        """a * b rounded to float32 (the simulator never fuses)."""
        return a * b

else:
    from numba.cuda import libdevice

    @cuda.jit(device=True)
    def mul(a, b):
        """a * b rounded to float32, never fused with an add into an fma."""
        return libdevice.fmul_rn(a, b)


@cuda.jit(device=True)
def distance2(dx, dy):
    return mul(dx, dx) + mul(dy, dy)


@cuda.jit(device=True)
def stage_tile(loc_x, loc_y, in_game, env, start, count, tile_x, tile_y, tile_in):
    """Copy agents [start, start + count) of this environment into shared memory: the
    threads of the block share the copying, then each of them reads all of them there."""
    for k in range(cuda.threadIdx.x, count, cuda.blockDim.x):
        tile_x[k] = loc_x[env, start + k]
        tile_y[k] = loc_y[env, start + k]
        tile_in[k] = in_game[env, start + k]


@cuda.jit(device=True)
def keep_nearest(d2, other, best_d2, best, num_nearest, found):
    """Keep the num_nearest smallest distances seen so far, nearest first; returns how many
    are kept. Agents come in index order and only a strictly nearer one moves past another,
    so of two at the same distance the lower index comes first."""
    if found == num_nearest and not d2 < best_d2[num_nearest - 1]:
        return found
    k = found if found < num_nearest else num_nearest - 1
    while k > 0 and best_d2[k - 1] > d2:  # farther ones move one place back
        best_d2[k] = best_d2[k - 1]
        best[k] = best[k - 1]
        k = k - 1
    best_d2[k] = d2
    best[k] = other
    return found + 1 if found < num_nearest else found


@cuda.jit(device=True)
def find_nearest(loc_x, loc_y, in_game, env, agent, active, num_agents, num_nearest,
                 tile_x, tile_y, tile_in, best_d2, best):
    """The num_nearest agents in the game nearest to `agent` (itself left out), into best[]
    (-1: no one). Every thread of the block must call it: it waits for the others at each
    tile. Threads past the last agent (active false) help copy and find nothing."""
    me = agent if active else 0
    my_x = loc_x[env, me]
    my_y = loc_y[env, me]
    for k in range(num_nearest):
        best[k] = -1
    found = 0
    for start in range(0, num_agents, TILE):
        count = min(TILE, num_agents - start)
        stage_tile(loc_x, loc_y, in_game, env, start, count, tile_x, tile_y, tile_in)
        cuda.syncthreads()
        for k in range(count if active else 0):
            if start + k == agent or tile_in[k] == 0:
                continue
            d2 = distance2(tile_x[k] - my_x, tile_y[k] - my_y)
            found = keep_nearest(d2, start + k, best_d2, best, num_nearest, found)
        cuda.syncthreads()  # everyone is done with this tile before the next overwrites it


@cuda.jit(device=True)
def neighbor(k, agent, full_observation, nearest):
    """Which agent fills neighbour slot k: the k-th nearest, or, with full observation, the
    k-th other agent in index order. -1: no one."""
    if full_observation:
        return k if k < agent else k + 1
    return nearest[k]


@cuda.jit(device=True)
def observe_self(o, x, y, field_size, is_runner, in_game):
    """The first features of an agent's own block: where it is, what it is, whether it
    plays."""
    o[0] = x / field_size
    o[1] = y / field_size
    o[2] = np.float32(is_runner)
    o[3] = np.float32(in_game)


@cuda.jit(device=True)
def observe_neighbor(o, dx, dy, field_size, is_runner):
    """The first features of a neighbour's slot: it is there, where it is from me, what it
    is."""
    o[0] = np.float32(1.0)
    o[1] = dx / field_size
    o[2] = dy / field_size
    o[3] = np.float32(is_runner)


@cuda.jit(device=True)
def clear(o):
    for f in range(o.shape[0]):
        o[f] = np.float32(0.0)


@cuda.jit(device=True)
def end_game(env, agent, is_runner, in_game, rewards, done, timestep, runners_left,
             episode_length, end_reward):
    """After the last catch of a step: runners still playing when time is up get end_reward;
    the game is over when time is up or no runner is left."""
    time_up = timestep[env] >= episode_length
    if time_up and is_runner and in_game[env, agent] != 0:
        rewards[env, agent] = rewards[env, agent] + end_reward
    if agent == 0:
        done[env] = time_up or runners_left[env] == 0


@cuda.jit
def tag_catch(loc_x, loc_y, in_game, rewards, runners_left, num_agents, num_taggers,
              tagging_distance, tag_reward, tag_penalty, runner_exits):
    """One thread per agent; each runner still in the game looks for the nearest tagger
    within tagging_distance (of two at the same distance, the lower index). If there is one,
    the runner gets tag_penalty, that tagger tag_reward, and the runner leaves if
    runner_exits."""
    tile_x = cuda.shared.array(TILE, float32)
    tile_y = cuda.shared.array(TILE, float32)
    tile_in = cuda.shared.array(TILE, int32)
    env = env_id()
    agent = agent_id()
    me = agent if agent < num_agents else 0
    running = agent < num_agents and agent >= num_taggers and in_game[env, me] != 0
    reach2 = mul(tagging_distance, tagging_distance)
    my_x = loc_x[env, me]
    my_y = loc_y[env, me]
    nearest = -1
    nearest_d2 = np.float32(0.0)
    for start in range(0, num_taggers, TILE):
        count = min(TILE, num_taggers - start)
        stage_tile(loc_x, loc_y, in_game, env, start, count, tile_x, tile_y, tile_in)
        cuda.syncthreads()
        for k in range(count if running else 0):
            if tile_in[k] == 0:
                continue
            d2 = distance2(tile_x[k] - my_x, tile_y[k] - my_y)
            if d2 <= reach2 and (nearest < 0 or d2 < nearest_d2):
                nearest = start + k
                nearest_d2 = d2
        cuda.syncthreads()
    if nearest < 0:
        return
    rewards[env, me] = rewards[env, me] + tag_penalty
    # Several runners may credit one tagger: atomically. The sum is the same in any order,
    # since every runner adds the same tag_reward.
    cuda.atomic.add(rewards, (env, nearest), tag_reward)
    if runner_exits:
        in_game[env, me] = 0
        cuda.atomic.sub(runners_left, env, 1)
