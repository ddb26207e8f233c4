// observe_fast.cu: speed only, behind the fast door (wd_teach.floors). The twin of
// tag_grid_observe in step.cu: the same observation and the same `nearest` rows, bit for bit
// (tests/test_tag_fast_observe.py, and tests/gpu on both backends), each thread's row staged
// in shared memory and each warp's rows written as the one run of memory they are
// (envs/_tag/fast.cuh). envs/tag_continuous/observe_fast.cu says why, and what the same
// change gained in the continuous game. The Numba twin, the same steps with uint32 offsets
// for its indices (it says why), is observe_fast_numba.py.
#include "fast.cuh"
#include "tag.cuh"

extern "C" __global__ void __launch_bounds__(TAG_MAX_THREADS)
    tag_grid_observe_fast(const float* loc_x, const float* loc_y, const int* in_game,
        float* obs, int* nearest, float* rewards, int* done, const int* timestep,
        const int* runners_left, int num_agents, int num_taggers, int num_neighbors,
        int full_observation, int search_grid, int obs_size, int own_size, int episode_length,
        float field_size, float end_reward) {
  __shared__ float tile_x[TAG_TILE];
  __shared__ float tile_y[TAG_TILE];
  __shared__ int tile_in[TAG_TILE];
  __shared__ float stage[FAST_STAGE_FLOATS];
  __shared__ int stage_shown[FAST_STAGE_INTS];
  // A block too large for its stage writes nothing (the same for every thread); the
  // wrapper never launches one, and the tests would see the empty rows.
  if ((int)blockDim.x * obs_size > FAST_STAGE_FLOATS ||
      (int)blockDim.x * num_neighbors > FAST_STAGE_INTS) return;
  int found[TAG_MAX_NEAREST];
  const int env = wd_env_id();
  const int agent = wd_agent_id();
  const bool active = agent < num_agents;
  if (!full_observation && !search_grid) {
    tag_find_nearest(loc_x, loc_y, in_game, env, agent, active, num_agents, num_neighbors,
                     tile_x, tile_y, tile_in, found);
  }
  float* o = stage + threadIdx.x * obs_size;  // my row, in the stage
  int* shown = stage_shown + threadIdx.x * num_neighbors;
  if (active) {
    const int i = wd_slot(env, agent, num_agents);
    if (!full_observation && search_grid) {
      tag_read_found(nearest + (long long)i * num_neighbors, num_neighbors, found);
    }
    tag_observe_self(o, loc_x[i], loc_y[i], field_size, agent >= num_taggers, in_game[i]);
    for (int k = 0; k < num_neighbors; ++k) {
      float* n = o + own_size * (k + 1);
      const int other = tag_neighbor(k, agent, full_observation, found);
      const int j = wd_slot(env, other >= 0 ? other : 0, num_agents);
      if (other < 0 || in_game[j] == 0) {
        tag_clear(n, own_size);
        shown[k] = -1;
        continue;
      }
      shown[k] = other;
      tag_observe_neighbor(n, loc_x[j] - loc_x[i], loc_y[j] - loc_y[i], field_size,
                           other >= num_taggers);
    }
    tag_end_game(env, agent, i, agent >= num_taggers, in_game, rewards, done, timestep,
                 runners_left, episode_length, end_reward);
  }
  __syncthreads();  // every thread of the block reaches it: the stage is full
  fast_write_rows(obs, nearest, stage, stage_shown, env, agent, num_agents, obs_size,
                  num_neighbors);
}
