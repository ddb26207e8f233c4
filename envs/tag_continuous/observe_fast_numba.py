"""Speed only, behind the fast door (wd_teach.floors): the Numba twin of observe_fast.cu,
which says what it changes and why. It replaces tag_continuous_observe in step_numba.py
(lesson 06's), with the same observation and `nearest` rows, bit for bit.

Each thread builds its rows in shared memory, the block waits once, and each warp writes
its 32 rows as one run (envs/_tag/fast_numba.py, which both Tag games' twins share).

The same steps as the C twin, in its order, with one difference of form: where C writes
through a pointer to its row, this kernel indexes the stage and the game's arrays with
uint32 offsets, cast back to uint32 after each sum, not through views of the stage and the
plain helpers lesson 06 shares (observe_self, observe_neighbor, clear). Numba types a sum
of int32s as int64 and checks each signed index for a negative one; with the views and
helpers the loop over neighbour slots was 266 machine instructions for sm_90 (C's: 192,
the empty slot's zeroing unrolled in both), with uint32 offsets 158 (bench/sass.py shows
the kernel's total; bench/NOTES.md the loops).
"""

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
from wd_teach_envs.tag_continuous.step_numba import OWN_FEATURES, max_speed_of


@observe_kernel
def tag_continuous_observe_fast(loc_x, loc_y, speed, heading, in_game, obs, nearest, rewards,
                                done, timestep, runners_left, direction_x, direction_y,
                                num_agents, num_taggers, num_neighbors, full_observation,
                                search_grid, obs_size, own_size, episode_length, field_size,
                                tagger_max_speed, runner_max_speed, end_reward):
    """tag_continuous_observe, each row staged in shared memory and written by its warp."""
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
        stage[uint32(o + OWN_FEATURES)] = speed[e, a] / max_speed_of(
            agent, num_taggers, tagger_max_speed, runner_max_speed)
        h = uint32(heading[e, a])
        stage[uint32(o + OWN_FEATURES + 1)] = direction_x[h]
        stage[uint32(o + OWN_FEATURES + 2)] = direction_y[h]
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
                stage[uint32(n + OWN_FEATURES)] = speed[e, j] / max_speed_of(
                    other, num_taggers, tagger_max_speed, runner_max_speed)
                h = uint32(heading[e, j])
                stage[uint32(n + OWN_FEATURES + 1)] = direction_x[h]
                stage[uint32(n + OWN_FEATURES + 2)] = direction_y[h]
            k = uint32(k + 1)
        end_game(env, agent, agent >= num_taggers, in_game, rewards, done, timestep,
                 runners_left, episode_length, end_reward)
    cuda.syncthreads()  # every thread of the block reaches it: the stage is full
    write_rows(obs, nearest, stage, stage_shown, env, agent, num_agents, obs_size,
               num_neighbors)
