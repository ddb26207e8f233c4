"""The nearest-neighbour search of the Tag games by itself, two ways, in Numba: the twin of
envs/_tag/nearest.cu, line for line but in one place (that file says why there are two,
what the grid is for, and how a game with search="grid" launches it). Both write
nearest[env, agent, k] (-1: no one), the slots of tag_reference.neighbors, bit for bit.

The one place: the grid search here walks an agent's cells in nested loops, a ring's cells
and each cell's candidates, where nearest.cu takes each lane's candidates as one run. The
same walk in Numba took the search from 2,217 to 3,204 us a step at 2,000 x 1,000 on an
H200 (bench/NOTES.md, "The grid search's lanes, each taking its candidates as one run,
measured"), where CUDA C gained 3%; why was not measured, so this twin keeps the walk that
was faster under Numba.

Numba has no __float_as_uint; libdevice's float_as_int gives the same bits (and int_as_float
turns them back) (as an int32, of
a distance of at least 0, so never negative). On the simulator there is no libdevice, and
NumPy reads the bits instead. Every integer that meets a key is made a uint64 first: Numba
turns uint64 mixed with a signed integer into a float64.
"""

import math

import numpy as np
from numba import cuda, float32, int32, uint64

from wd_teach.env import agent_id, env_id, simulator_on
from wd_teach_envs._tag.fast_numba import write_run
from wd_teach_envs._tag.tag_numba import (
    MAX_NEAREST,
    TILE,
    distance2,
    find_nearest,
    observe_kernel,
)

GRID_MAX_AGENTS = 2048  # the most agents of one env the grid holds
GRID_MAX_SIDE = 32  # the most cells along a side
AGENTS_PER_CELL = 2  # what a block sizes its grid for (game.py's AGENTS_PER_CELL)
# Shared arrays need sizes Numba reads as constants: a product worked out in the call
# (GRID_MAX_SIDE * GRID_MAX_SIDE + 1) is typed as a run-time int64 and does not compile.
GRID_CELLS = 1024  # GRID_MAX_SIDE squared
GRID_CELL_STARTS = 1025  # each cell's start, and where the last one ends
EVERY = 0x10000  # grid_by_cell: a cell's count of every agent, above those playing
PLAYING = 0xFFFF
NO_ONE = np.uint64(0xFFFFFFFFFFFFFFFF)  # an empty slot: after every key
LOW_BITS = np.uint64(0xFFFFFFFF)
SHIFT = np.uint64(32)

if simulator_on():

    @cuda.jit(device=True)
    def float_bits(x):
        """The bits of float32 x, as an integer."""
        return np.float32(x).view(np.int32)

    @cuda.jit(device=True)
    def bits_float(i):
        """The float32 whose bits are int32 i."""
        return np.int32(i).view(np.float32)

else:
    from numba.cuda import libdevice

    @cuda.jit(device=True)
    def float_bits(x):
        """The bits of float32 x, as an integer."""
        return libdevice.float_as_int(x)

    @cuda.jit(device=True)
    def bits_float(i):
        """The float32 whose bits are int32 i."""
        return libdevice.int_as_float(i)


@observe_kernel
def tag_nearest_tiles(loc_x, loc_y, in_game, nearest, num_agents, num_nearest):
    """One thread per agent: its num_nearest nearest by find_nearest, written out."""
    tile_x = cuda.shared.array(TILE, float32)
    tile_y = cuda.shared.array(TILE, float32)
    tile_in = cuda.shared.array(TILE, int32)
    found = cuda.local.array(MAX_NEAREST, int32)
    env = env_id()
    agent = agent_id()
    active = agent < num_agents
    find_nearest(loc_x, loc_y, in_game, env, agent, active, num_agents, num_nearest, tile_x,
                 tile_y, tile_in, found)
    if not active:
        return
    for k in range(MAX_NEAREST):
        if k < num_nearest:
            nearest[env, agent, k] = found[k]


@cuda.jit(device=True)
def key_of(d2, other):
    """The distance's bits above the agent's index: keys order by distance, then index."""
    return (uint64(float_bits(d2)) << SHIFT) | uint64(other)


@cuda.jit(device=True)
def keep_nearest_keys(key, best, num_nearest):
    """keep_nearest with keys: the newcomer takes the first slot with a larger key, and
    from there each slot takes the one before it. Returns the key now in the last slot."""
    moving = False
    last = key
    for k in range(MAX_NEAREST):
        if k < num_nearest and (moving or key < best[k]):
            b = best[k]
            best[k] = key
            key = b
            moving = True
        if k + 1 == num_nearest:  # nearest.cu says why this way round
            last = best[k]
    return last


#: The num_nearest the search's hot loop knows when it compiles (nearest.cu's
#: TAG_GRID_FAST_NEAREST): keep_nearest_fast runs FAST_NEAREST slots, not MAX_NEAREST with a
#: test each.
FAST_NEAREST = 10


@cuda.jit(device=True)
def keep_nearest_fast(key, best):
    """keep_nearest_keys with num_nearest = FAST_NEAREST, known when it compiles."""
    moving = False
    for k in range(FAST_NEAREST):
        if moving or key < best[k]:
            b = best[k]
            best[k] = key
            key = b
            moving = True
    return best[FAST_NEAREST - 1]


@cuda.jit(device=True)
def cell_of(v, cells_per_unit, grid_side):
    """The cell, along one side, of a coordinate (the far edge in the last cell)."""
    return min(max(int32(v * cells_per_unit), 0), grid_side - 1)


@cuda.jit(device=True)
def cell_index(x, y, cells_per_unit, grid_side):
    return (cell_of(y, cells_per_unit, grid_side) * grid_side
            + cell_of(x, cells_per_unit, grid_side))


@cuda.jit(device=True)
def sum_round(source, target, cells, d):
    """One round of the grid's running sum: target[c] = source[c] plus source[c - d]."""
    c = cuda.threadIdx.x
    while c < cells:
        target[c] = source[c] + (source[c - d] if c >= d else 0)
        c += cuda.blockDim.x


@cuda.jit(device=True)
def grid_side_for(playing, most):
    """The grid's side for the agents in the game now: about AGENTS_PER_CELL of them a
    cell, at least 1 and at most the side sized for all of them (nearest.cu says why)."""
    side = int32(math.sqrt(float32(playing) / float32(AGENTS_PER_CELL)) + float32(0.5))
    return min(max(side, 1), most)


@cuda.jit(device=True)
def write_rows_of(nearest, env, staged, start, agents, first, rows, width, lane, live):
    """grid_by_cell's step 5: a warp's `rows` rows of `width`, from staged[start:], each to its
    agent's row, agents[first + row] (nearest.cu's tag_write_rows_of)."""
    row = lane // width  # carried forward, not divided again
    k = lane % width
    e = lane
    while e < rows * width:
        nearest[env, agents[first + row], k] = staged[start + e]
        e += live
        k += live
        while k >= width:
            k -= width
            row += 1


@observe_kernel
def tag_nearest_grid(loc_x, loc_y, in_game, nearest, num_agents, num_nearest, grid_side,
                     field_size, grid_by_cell):
    """One thread per agent, every block of an env building the env's whole grid.
    grid_side: the side for the game with every agent in it; the block takes a smaller one
    when fewer are in the game. grid_by_cell: 1 gives the env's agents to its threads cell by
    cell (nearest.cu says why)."""
    sorted_x = cuda.shared.array(GRID_MAX_AGENTS, float32)  # agents in the game, by cell
    sorted_y = cuda.shared.array(GRID_MAX_AGENTS, float32)
    sorted_agent = cuda.shared.array(GRID_MAX_AGENTS, int32)
    by_cell_agent = cuda.shared.array(GRID_MAX_AGENTS, int32)  # grid_by_cell: all, by cell
    cell_start = cuda.shared.array(GRID_CELL_STARTS, int32)
    cell_next = cuda.shared.array(GRID_CELLS, int32)
    cell_sum = cuda.shared.array(GRID_CELLS, int32)  # step 2's other half
    playing = cuda.shared.array(1, int32)  # the env's agents in the game
    env = env_id()
    agent = agent_id()

    # 0. Size the grid by the agents still in the game.
    if cuda.threadIdx.x == 0:
        playing[0] = 0
    cuda.syncthreads()
    mine = 0
    a = cuda.threadIdx.x
    while a < num_agents:
        if in_game[env, a] != 0:
            mine += 1
        a += cuda.blockDim.x
    if mine > 0:
        cuda.atomic.add(playing, 0, mine)
    cuda.syncthreads()
    grid_side = grid_side_for(playing[0], grid_side)
    cells = grid_side * grid_side
    cells_per_unit = float32(grid_side) / field_size

    # 1. Count the agents in the game in each cell (grid_by_cell: and every agent, in the high
    #    half).
    c = cuda.threadIdx.x
    while c < cells:
        cell_next[c] = 0
        c += cuda.blockDim.x
    cuda.syncthreads()
    every = EVERY if grid_by_cell else 0
    a = cuda.threadIdx.x
    while a < num_agents:
        count = int32((in_game[env, a] != 0) + every)
        if count != 0:
            cuda.atomic.add(cell_next, cell_index(loc_x[env, a], loc_y[env, a],
                                                  cells_per_unit, grid_side), count)
        a += cuda.blockDim.x
    cuda.syncthreads()
    # 2. Where each cell's agents start: a running sum in log2(cells) rounds of the whole
    #    block (nearest.cu says how and why), then each cell's next free place is its start.
    in_sum = False  # whether the sums so far are in cell_sum (else in cell_next)
    d = 1
    while d < cells:
        if in_sum:
            sum_round(cell_sum, cell_next, cells, d)
        else:
            sum_round(cell_next, cell_sum, cells, d)
        in_sum = not in_sum
        cuda.syncthreads()
        d *= 2
    c = cuda.threadIdx.x
    while c < cells:  # the agents in cells 0 to c
        cell_start[c + 1] = cell_sum[c] if in_sum else cell_next[c]
        c += cuda.blockDim.x
    if cuda.threadIdx.x == 0:
        cell_start[0] = 0
    cuda.syncthreads()
    c = cuda.threadIdx.x
    while c < cells:
        cell_next[c] = cell_start[c]
        c += cuda.blockDim.x
    cuda.syncthreads()
    # 3. Each agent in the game into its cell's next free place (within a cell in any order);
    #    grid_by_cell, every agent into the cell's next place in by_cell_agent too.
    a = cuda.threadIdx.x
    while a < num_agents:
        playing_here = int32(in_game[env, a] != 0)
        if playing_here + every != 0:
            c = cell_index(loc_x[env, a], loc_y[env, a], cells_per_unit, grid_side)
            at = cuda.atomic.add(cell_next, c, int32(playing_here + every))
            if grid_by_cell:
                by_cell_agent[at // EVERY] = a
            if playing_here:
                place = at & PLAYING
                sorted_x[place] = loc_x[env, a]
                sorted_y[place] = loc_y[env, a]
                sorted_agent[place] = a
        a += cuda.blockDim.x
    cuda.syncthreads()
    if grid_by_cell:
        # Each cell's agents in index order, so that every block of the env puts them in the
        # same order (nearest.cu says why).
        c = cuda.threadIdx.x
        while c < cells:
            first = cell_start[c] // EVERY
            end = cell_start[c + 1] // EVERY
            n = first + 1
            while n < end:
                a = by_cell_agent[n]
                m = n
                while m > first and by_cell_agent[m - 1] > a:
                    by_cell_agent[m] = by_cell_agent[m - 1]
                    m -= 1
                by_cell_agent[m] = a
                n += 1
            c += cuda.blockDim.x
        cuda.syncthreads()
        c = cuda.threadIdx.x  # the cells' starts, of the agents in the game only
        while c <= cells:
            cell_start[c] = cell_start[c] & PLAYING
            c += cuda.blockDim.x
        cuda.syncthreads()
    # A thread past the env's last agent searches nothing, but stays for step 5's barriers.
    active = agent < num_agents
    # The agent this thread searches for: the agent-th by cell, or by index.
    me = (by_cell_agent[agent] if grid_by_cell else agent) if active else 0

    # 4. Search ring by ring: ring r is the cells r away from mine, ring 0 my own cell.
    #    Every integer of the walk is kept an int32 (int32(...) around each sum): Numba types
    #    a sum of integers as int64, and the walk's ring, cell and place as 64-bit values
    #    took twice the registers, so that ptxas spilled them to local memory (84 bytes
    #    stored, 108 loaded, in the ring loop) and each add and compare was two
    #    instructions. Compiled for sm_90 (numba-cuda 0.30.4, ptxas 13.0): 2,168
    #    instructions with 64-bit integers, 1,987 and no spill with these (C: 1,132).
    my_x = loc_x[env, me]
    my_y = loc_y[env, me]
    cx = int32(cell_of(my_x, cells_per_unit, grid_side))
    cy = int32(cell_of(my_y, cells_per_unit, grid_side))
    width = int32(grid_side)  # cells along a side, as an int32
    cell = field_size / float32(grid_side)
    slack = float32(1e-4) * cell  # nearest.cu says why
    best = cuda.local.array(MAX_NEAREST, uint64)
    for k in range(MAX_NEAREST):
        best[k] = NO_ONE
    last = NO_ONE  # the key in the last slot
    r = int32(0) if active else width
    while r < width:
        # The ring's cells in one walk, each once: four sides of 2r, clockwise from its
        # top left corner (1 cell for r = 0); those off the field are passed over.
        ring = int32(1) if r == 0 else int32(8 * r)
        t = int32(0)
        side = int32(0)  # the cell: which side of the ring, and how far along it (nearest.cu)
        along = int32(0)
        while t < ring:
            if side == 0:
                gx, gy = int32(cx - r + along), int32(cy - r)
            elif side == 1:
                gx, gy = int32(cx + r), int32(cy - r + along)
            elif side == 2:
                gx, gy = int32(cx + r - along), int32(cy + r)
            else:
                gx, gy = int32(cx - r), int32(cy + r - along)
            t = int32(t + 1)
            along = int32(along + 1)
            if along == int32(2 * r):
                along = int32(0)
                side = int32(side + 1)
            if gx < 0 or gx >= width or gy < 0 or gy >= width:
                continue
            c = int32(gy * width + gx)
            s = cell_start[c]
            end = cell_start[c + 1]
            while s < end:
                other = sorted_agent[s]
                if other != me:
                    key = key_of(distance2(sorted_x[s] - my_x, sorted_y[s] - my_y), other)
                    if key < last:
                        if num_nearest == FAST_NEAREST:
                            last = keep_nearest_fast(key, best)
                        else:
                            last = keep_nearest_keys(key, best, num_nearest)
                s = int32(s + 1)
        # Done when every slot is full and nothing outside the square searched can come
        # before the last: all of it is at least `margin` from me.
        if last != NO_ONE:
            margin = float32(np.inf)
            if cx - r > 0:
                margin = min(margin, my_x - float32(cx - r) * cell)
            if cx + r < width - 1:
                margin = min(margin, float32(cx + r + 1) * cell - my_x)
            if cy - r > 0:
                margin = min(margin, my_y - float32(cy - r) * cell)
            if cy + r < width - 1:
                margin = min(margin, float32(cy + r + 1) * cell - my_y)
            margin = margin - slack
            last_d2 = bits_float(int32(last >> SHIFT))
            if margin > 0 and last_d2 < float32(0.999) * margin * margin:
                break
        r = int32(r + 1)

    # 5. Write the slots, each warp's rows as one run, staged a few warps at a time in
    #    sorted_agent (nearest.cu says why).
    stage = sorted_agent
    lane = cuda.threadIdx.x % 32
    warp = cuda.threadIdx.x // 32
    per_round = GRID_MAX_AGENTS // (32 * num_nearest)  # warps; 4 at 16 nearest
    round_ = 0
    while round_ * per_round < (cuda.blockDim.x + 31) // 32:
        cuda.syncthreads()  # the stage is free: every search, or the round before, is done
        at = warp - round_ * per_round  # this warp's place in the round, if it has one
        in_round = at >= 0 and at < per_round
        if in_round and active:
            row = (at * 32 + lane) * num_nearest
            for k in range(MAX_NEAREST):
                if k < num_nearest:
                    stage[row + k] = -1 if best[k] == NO_ONE else int32(best[k] & LOW_BITS)
        cuda.syncthreads()  # the round's rows are staged
        if in_round:
            first = agent - lane  # the warp's first agent (grid_by_cell: first place)
            live = min(32, cuda.blockDim.x - warp * 32)  # its lanes
            rows = max(0, min(live, num_agents - first))
            if grid_by_cell:
                write_rows_of(nearest, env, stage, at * 32 * num_nearest, by_cell_agent,
                              first, rows, num_nearest, lane, live)
            else:
                write_run(nearest, env, first, stage, at * 32 * num_nearest, rows,
                          num_nearest, lane, live)
        round_ += 1
