"""What the two Tag games share, in Numba: the twin of envs/_tag/tag.cuh and tag.cu,
line for line. C has one namespace, so there every name carries a `tag_` prefix; here the
module is the prefix. C sees arrays as flat pointers, Numba with their shape, so the C
functions take num_agents (and the slot i) where Numba indexes [env, agent].

`mul` is a product that the compiler never fuses with an add into one fma (libdevice's
fmul_rn on a GPU; on the simulator every product is rounded on its own anyway), so positions
and distances come out bit for bit as in NumPy. tag.cuh says why that matters.

A loop that runs a number of times known only at run time is a `while` loop here where C
has `for`, for speed. Numba's `for k in range(n)` keeps a count of the steps left beside k,
and the compiler could not prove k never negative, so each `a[k]` kept Python's check for a
negative index; with those counters and checks the observe kernel needed more than its 64
registers and spilled. A `while` loop with one counter compiles to what C's `for` does.
Loops over a constant count (`range(MAX_NEAREST)`) are unrolled, so they stay `for` loops.
"""

import numpy as np
from numba import cuda, float32, int32

from wd_teach.env import agent_id, env_id, simulator_on

TILE = 128  # agents staged in shared memory at a time
MAX_NEAREST = 16  # the most neighbours an agent can see by distance
#: The largest block a game launches; tag.cuh's TAG_MAX_THREADS says why kernels declare it.
MAX_THREADS = 1024


def observe_kernel(fn):
    """`cuda.jit` for a kernel that keeps arrays in registers: with launch bounds, so that
    it fits a block of MAX_THREADS (the simulator has no registers, and no such option)."""
    return cuda.jit(fn) if simulator_on() else cuda.jit(launch_bounds=MAX_THREADS)(fn)

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
    k = cuda.threadIdx.x
    while k < count:  # while, not range: the module's docstring says why
        tile_x[k] = loc_x[env, start + k]
        tile_y[k] = loc_y[env, start + k]
        tile_in[k] = in_game[env, start + k]
        k += cuda.blockDim.x


@cuda.jit(device=True)
def keep_nearest(d2, other, best_d2, best, num_nearest):
    """Keep the num_nearest smallest distances seen so far, nearest first (an empty slot
    holds an infinite distance). The newcomer takes the first slot whose distance is
    strictly larger, and from there each slot takes the one before it: a farther one moves
    one place back. Agents come in index order, so of two at the same distance the lower
    index stays first. The loop runs over every possible slot (a constant count, which the
    compiler can unroll so that the arrays stay in registers). Returns the distance now in
    the last slot: only an agent nearer than that can still get in."""
    moving = False
    last = d2
    for k in range(MAX_NEAREST):
        if k < num_nearest and (moving or d2 < best_d2[k]):
            d = best_d2[k]
            b = best[k]
            best_d2[k] = d2
            best[k] = other
            d2 = d
            other = b
            moving = True
        # C's k == num_nearest - 1; this way round the test is 32-bit, as in C (Numba
        # would work out num_nearest - 1 in 64 bits and compare 64-bit in every slot).
        if k + 1 == num_nearest:
            last = best_d2[k]
    return last


@cuda.jit(device=True)
def find_nearest(loc_x, loc_y, in_game, env, agent, active, num_agents, num_nearest,
                 tile_x, tile_y, tile_in, found):
    """The num_nearest agents in the game nearest to `agent` (itself left out), into
    found[] (-1: no one). Every thread of the block must call it: it waits for the others
    at each tile. Threads past the last agent (active false) help copy and find nothing."""
    me = agent if active else 0
    my_x = loc_x[env, me]
    my_y = loc_y[env, me]
    best_d2 = cuda.local.array(MAX_NEAREST, float32)
    best = cuda.local.array(MAX_NEAREST, int32)
    for k in range(MAX_NEAREST):
        best_d2[k] = np.float32(np.inf)
        best[k] = -1
    worst = np.float32(np.inf)  # the distance in the last slot
    start = 0
    while start < num_agents:  # while, not range: the module's docstring says why
        count = min(TILE, num_agents - start)
        stage_tile(loc_x, loc_y, in_game, env, start, count, tile_x, tile_y, tile_in)
        cuda.syncthreads()
        k = 0
        while active and k < count:
            # An if where C has `continue`, which here would skip the k += 1.
            if start + k != agent and tile_in[k] != 0:
                d2 = distance2(tile_x[k] - my_x, tile_y[k] - my_y)
                if d2 < worst:
                    # An int32, as best[] holds: Numba's sums are 64-bit, and with a 64-bit
                    # index keep_nearest's swaps became branches instead of C's selects.
                    worst = keep_nearest(d2, int32(start + k), best_d2, best, num_nearest)
            k += 1
        cuda.syncthreads()  # everyone is done with this tile before the next overwrites it
        start += TILE
    for k in range(MAX_NEAREST):
        if k < num_nearest:
            found[k] = best[k]


@cuda.jit(device=True)
def read_found(row, num_nearest, found):
    """The nearest that tag_nearest_grid (nearest_numba.py) wrote to this agent's row of
    `nearest`, launched just before the observe kernel, into found[] as find_nearest would
    give them."""
    k = 0
    while k < num_nearest:
        found[k] = row[k]
        k += 1


@cuda.jit(device=True)
def neighbor(k, agent, full_observation, found):
    """Which agent fills neighbour slot k: the k-th nearest, or, with full observation, the
    k-th other agent in index order. -1: no one."""
    if full_observation:
        return k if k < agent else k + 1
    return found[k]


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
def clear(o, size):
    """Zero the first size features of o (an empty neighbour slot)."""
    f = 0
    while f < size:
        o[f] = np.float32(0.0)
        f += 1


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
              tagging_distance, taggers_needed, tag_reward, tag_penalty, runner_exits):
    """One thread per agent; each runner still in the game counts the taggers within
    tagging_distance and is caught when there are at least taggers_needed of them. Then the
    runner gets tag_penalty and leaves if runner_exits, and tag_reward goes to the nearest
    tagger within reach (of two at the same distance, the lower index) when one is needed,
    or to every tagger within reach when the catch takes several: each of them did it."""
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
    within = 0  # taggers within reach
    start = 0
    while start < num_taggers:  # while, not range: the module's docstring says why
        count = min(TILE, num_taggers - start)
        stage_tile(loc_x, loc_y, in_game, env, start, count, tile_x, tile_y, tile_in)
        cuda.syncthreads()
        k = 0
        while running and k < count:
            if tile_in[k] != 0:
                d2 = distance2(tile_x[k] - my_x, tile_y[k] - my_y)
                if d2 <= reach2:
                    within += 1
                    if nearest < 0 or d2 < nearest_d2:
                        nearest = start + k
                        nearest_d2 = d2
            k += 1
        cuda.syncthreads()
        start += TILE
    caught = within >= taggers_needed  # taggers_needed >= 1: a runner in the game
    # Several runners may credit one tagger: atomically. The sum is the same in any order,
    # since every runner adds the same tag_reward.
    if taggers_needed > 1:  # the same for every thread: the whole block stages the tiles
        start = 0
        while start < num_taggers:
            count = min(TILE, num_taggers - start)
            stage_tile(loc_x, loc_y, in_game, env, start, count, tile_x, tile_y, tile_in)
            cuda.syncthreads()
            k = 0
            while caught and k < count:
                if tile_in[k] != 0 and distance2(tile_x[k] - my_x,
                                                 tile_y[k] - my_y) <= reach2:
                    cuda.atomic.add(rewards, (env, start + k), tag_reward)
                k += 1
            cuda.syncthreads()
            start += TILE
    if not caught:
        return
    rewards[env, me] = rewards[env, me] + tag_penalty
    if taggers_needed == 1:
        cuda.atomic.add(rewards, (env, nearest), tag_reward)
    if runner_exits:
        in_game[env, me] = 0
        cuda.atomic.sub(runners_left, env, 1)
