// observe_fast.cu: speed only, behind the fast door (wd_teach.floors). The twin of
// tag_continuous_observe in step.cu, which lesson 06 reads: the same observation and the same
// `nearest` rows, bit for bit (tests/test_tag_fast_observe.py, and tests/gpu on both
// backends), written another way. The Numba twin, the same steps with uint32 offsets for
// its indices (it says why), is observe_fast_numba.py.
//
// What it changes. In step.cu a thread writes its own row of 77 floats (at 10 nearest), so
// each store of a warp touches 32 rows 308 bytes apart. bench/row_writes.py timed that
// pattern alone at 2,000 envs x 1,000 agents on an H200: 3.66 ms for 616 MB (168 GB/s),
// the plain observe's whole time in the step. Here each thread builds its row in shared
// memory instead, the block waits once, and each warp writes its 32 rows as the one run of
// memory they are, consecutive lanes on consecutive floats: 0.155 ms for the same bytes
// (bench/NOTES.md, "The strided writes, measured"). The `nearest` rows go the same way.
//
// The stage must hold a block's rows, so blocks are small: 32 * (how many warps' rows fit)
// threads, 128 at 10 nearest (TagContinuous.fast_kernels works it out), several blocks an
// env. Nothing here needs the whole env in one block: the tiled search stages every agent
// of the env in each block, and the only barrier waits for the block's own stage.
#include "fast.cuh"
#include "tag.cuh"

#define OWN_FEATURES 4

__device__ __forceinline__ float fast_max_speed(int agent, int num_taggers,
                                                float tagger_max_speed, float runner_max_speed) {
  return agent < num_taggers ? tagger_max_speed : runner_max_speed;
}

extern "C" __global__ void __launch_bounds__(TAG_MAX_THREADS)
    tag_continuous_observe_fast(const float* loc_x, const float* loc_y, const float* speed,
        const int* heading, const int* in_game, float* obs, int* nearest, float* rewards,
        int* done, const int* timestep, const int* runners_left, const float* direction_x,
        const float* direction_y, int num_agents, int num_taggers, int num_neighbors,
        int full_observation, int search_grid, int obs_size, int own_size, int episode_length,
        float field_size, float tagger_max_speed, float runner_max_speed, float end_reward) {
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
    o[OWN_FEATURES + 0] = speed[i] / fast_max_speed(agent, num_taggers, tagger_max_speed,
                                                    runner_max_speed);
    o[OWN_FEATURES + 1] = direction_x[heading[i]];
    o[OWN_FEATURES + 2] = direction_y[heading[i]];
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
      n[OWN_FEATURES + 0] = speed[j] / fast_max_speed(other, num_taggers, tagger_max_speed,
                                                      runner_max_speed);
      n[OWN_FEATURES + 1] = direction_x[heading[j]];
      n[OWN_FEATURES + 2] = direction_y[heading[j]];
    }
    tag_end_game(env, agent, i, agent >= num_taggers, in_game, rewards, done, timestep,
                 runners_left, episode_length, end_reward);
  }
  __syncthreads();  // every thread of the block reaches it: the stage is full
  fast_write_rows(obs, nearest, stage, stage_shown, env, agent, num_agents, obs_size,
                  num_neighbors);
}
