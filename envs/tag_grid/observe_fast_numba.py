"""Speed only, behind the fast door (wd_teach.floors): the Numba twin of observe_fast.cu,
line for line. It replaces tag_grid_observe in step_numba.py, with the same observation and
`nearest` rows, bit for bit: each thread builds its row in shared memory, the block waits
once, and each warp writes its 32 rows as one run (envs/_tag/fast_numba.py;
envs/tag_continuous/observe_fast.cu says why)."""

from numba import cuda, float32, int32

from wd_teach.env import agent_id, env_id
from wd_teach_envs._tag.fast_numba import STAGE_FLOATS, STAGE_INTS, write_rows
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
    o = stage[cuda.threadIdx.x * obs_size:]
    shown = stage_shown[cuda.threadIdx.x * num_neighbors:]
    if active:
        i = (env, agent)
        if not full_observation and search_grid:
            read_found(nearest[env, agent], num_neighbors, found)
        observe_self(o, loc_x[i], loc_y[i], field_size, agent >= num_taggers, in_game[i])
        k = 0
        while k < num_neighbors:
            n = o[own_size * (k + 1):]
            other = neighbor(k, agent, full_observation, found)
            j = (env, other if other >= 0 else 0)
            if other < 0 or in_game[j] == 0:
                clear(n, own_size)
                shown[k] = -1
            else:
                shown[k] = other
                observe_neighbor(n, loc_x[j] - loc_x[i], loc_y[j] - loc_y[i], field_size,
                                 other >= num_taggers)
            k += 1
        end_game(env, agent, agent >= num_taggers, in_game, rewards, done, timestep,
                 runners_left, episode_length, end_reward)
    cuda.syncthreads()  # every thread of the block reaches it: the stage is full
    write_rows(obs, nearest, stage, stage_shown, env, agent, num_agents, obs_size,
               num_neighbors)
