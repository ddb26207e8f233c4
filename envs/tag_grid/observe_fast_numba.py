"""Speed only, behind the fast door (wd_teach.floors): the Numba twin of observe_fast.cu.
It replaces tag_grid_observe in step_numba.py, with the same observation and `nearest` rows,
bit for bit: each thread builds its row in shared memory, the block waits once, and each
warp writes its 32 rows as one run (envs/_tag/fast_numba.py; envs/tag_continuous/
observe_fast.cu says why). The stage and the game's arrays are indexed with uint32 offsets,
not through views and lesson 06's helpers, as in the continuous game's twin
(envs/tag_continuous/observe_fast_numba.py says why): the loop over neighbour slots went
from about 200 machine instructions for sm_90 to about 105 (C's: about 155, with the empty
slot's zeroing unrolled; bench/sass.py --loops)."""

from numba import cuda, float32, int32, uint32

from wd_teach.env import agent_id, env_id
from wd_teach_envs._tag.fast_numba import (
    STAGE_FLOATS,
    STAGE_INTS,
    stage_empty_slot,
    write_rows,
)
from wd_teach_envs._tag.tag_numba import (
    MAX_NEAREST,
    TILE,
    end_game,
    find_nearest,
    neighbor,
    observe_kernel,
    read_found,
)


@observe_kernel
def tag_grid_observe_fast(loc_x, loc_y, in_game, obs, nearest, rewards, done, timestep,
                          runners_left, num_agents, num_taggers, num_neighbors,
                          full_observation, search_grid, obs_size, own_size, episode_length,
                          field_size, end_reward):
    """tag_grid_observe, each row staged in shared memory and written by its warp."""
    tile_x = cuda.shared.array(TILE, float32)
    tile_y = cuda.shared.array(TILE, float32)
    tile_in = cuda.shared.array(TILE, int32)
    stage = cuda.shared.array(STAGE_FLOATS, float32)
    stage_shown = cuda.shared.array(STAGE_INTS, int32)
    if (cuda.blockDim.x * obs_size > STAGE_FLOATS
            or cuda.blockDim.x * num_neighbors > STAGE_INTS):
        return
    found = cuda.local.array(MAX_NEAREST, int32)
    env = env_id()
    agent = agent_id()
    active = agent < num_agents
    if not full_observation and not search_grid:
        find_nearest(loc_x, loc_y, in_game, env, agent, active, num_agents, num_neighbors,
                     tile_x, tile_y, tile_in, found)
    o = uint32(cuda.threadIdx.x * obs_size)  # my row, in the stage
    shown = uint32(cuda.threadIdx.x * num_neighbors)
    if active:
        e = uint32(env)
        a = uint32(agent)
        if not full_observation and search_grid:
            read_found(nearest[env, agent], num_neighbors, found)
        x = loc_x[e, a]
        y = loc_y[e, a]
        stage[o] = x / field_size
        stage[uint32(o + 1)] = y / field_size
        stage[uint32(o + 2)] = float32(agent >= num_taggers)
        stage[uint32(o + 3)] = float32(in_game[e, a])
        k = uint32(0)
        n = o
        while k < num_neighbors:
            n = uint32(n + own_size)
            other = neighbor(k, agent, full_observation, found)
            j = uint32(other if other >= 0 else 0)
            if other < 0 or in_game[e, j] == 0:
                stage_empty_slot(stage, stage_shown, n, shown, k, own_size)
            else:
                stage_shown[uint32(shown + k)] = other
                stage[n] = float32(1.0)
                stage[uint32(n + 1)] = (loc_x[e, j] - x) / field_size
                stage[uint32(n + 2)] = (loc_y[e, j] - y) / field_size
                stage[uint32(n + 3)] = float32(other >= num_taggers)
            k = uint32(k + 1)
        end_game(env, agent, agent >= num_taggers, in_game, rewards, done, timestep,
                 runners_left, episode_length, end_reward)
    cuda.syncthreads()  # every thread of the block reaches it: the stage is full
    write_rows(obs, nearest, stage, stage_shown, env, agent, num_agents, obs_size,
               num_neighbors)
