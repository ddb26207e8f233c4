"""Speed only, behind the fast door (wd_teach.floors): the Numba twin of fast.cuh, line for
line, what the Tag games' observe twins share: a block's rows staged in shared memory, then
each warp's rows written as the one run of memory they are. envs/tag_continuous/
observe_fast.cu says why.

The run's index into the [env, agent, feature] array moves along by a lane count at a time,
row and feature carried forward, not divided out of a flat index on every float
(bench/row_writes_numba.py's rows_warp divides, and is 4 times slower than C's)."""

from numba import cuda, float32, uint32

STAGE_FLOATS = 10240  # 40 KB: a block's observation rows
STAGE_INTS = 1536  # 6 KB: its `nearest` rows


@cuda.jit(device=True)
def stage_empty_slot(stage, stage_shown, n, shown, k, own_size):
    """An empty neighbour slot k, staged: its `own_size` floats from stage[n:] zero, and -1
    where its agent's index goes. The offsets are uint32, as in write_run below."""
    f = uint32(0)
    while f < own_size:
        stage[uint32(n + f)] = float32(0.0)
        f = uint32(f + 1)
    stage_shown[uint32(shown + k)] = -1


@cuda.jit(device=True)
def write_run(out, env, first, staged, start, rows, width, lane, live):
    """A warp's `rows` rows of `width`, from staged[start:] to out[env, first:] as one run.

    Every index is a uint32, cast back after each sum. Numba types a sum of int32s as int64
    and checks each signed index for a negative one: with plain ints the loop below was 57
    machine instructions (sm_90, bench/sass.py), with unsigned 32-bit ones 34 (C's
    fast_write_run, a flat pointer unrolled four times: about 10 a float)."""
    w = uint32(width)
    step = uint32(live)
    row = uint32(first + lane // width)
    feature = uint32(lane % width)
    e = uint32(start + lane)
    end = uint32(start + rows * width)
    here = uint32(env)
    while e < end:
        out[here, row, feature] = staged[e]
        e = uint32(e + step)
        feature = uint32(feature + step)
        while feature >= w:
            feature = uint32(feature - w)
            row = uint32(row + 1)


@cuda.jit(device=True)
def write_rows(obs, nearest, stage, stage_shown, env, agent, num_agents, obs_size,
               num_neighbors):
    """After the block's barrier, with every row of it staged: this thread's warp writes its
    rows of obs and of nearest, one a lane, and only the agents there are (a block of fewer
    than 32 threads ends its warp early, and the next block writes the rows after it)."""
    lane = cuda.threadIdx.x % 32
    first = agent - lane  # the warp's first agent
    live = min(32, cuda.blockDim.x - (cuda.threadIdx.x - lane))  # its lanes
    rows = max(0, min(live, num_agents - first))
    if rows == 0:
        return
    warp = cuda.threadIdx.x - lane
    write_run(obs, env, first, stage, warp * obs_size, rows, obs_size, lane, live)
    write_run(nearest, env, first, stage_shown, warp * num_neighbors, rows, num_neighbors, lane,
              live)
