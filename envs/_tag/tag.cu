// tag.cu: the catch, the same in both Tag games. Runs after the move kernel has moved every
// agent (a kernel boundary is the one wait that covers all blocks of an environment).
// The Numba twin, line for line, is tag_catch in envs/_tag/tag_numba.py.
#include "tag.cuh"

// One thread per agent; each runner still in the game counts the taggers within
// tagging_distance and is caught when there are at least taggers_needed of them. Then the
// runner gets tag_penalty and leaves if runner_exits, and tag_reward goes to the nearest
// tagger within reach (of two at the same distance, the lower index) when one is needed,
// or to every tagger within reach when the catch takes several: each of them did it.
extern "C" __global__ void tag_catch(const float* loc_x, const float* loc_y, int* in_game,
                                     float* rewards, int* runners_left, int num_agents,
                                     int num_taggers, float tagging_distance,
                                     int taggers_needed, float tag_reward, float tag_penalty,
                                     int runner_exits) {
  __shared__ float tile_x[TAG_TILE];
  __shared__ float tile_y[TAG_TILE];
  __shared__ int tile_in[TAG_TILE];
  const int env = wd_env_id();
  const int agent = wd_agent_id();
  const int i = wd_slot(env, agent < num_agents ? agent : 0, num_agents);
  const bool running = agent < num_agents && agent >= num_taggers && in_game[i] != 0;
  const float reach2 = tag_mul(tagging_distance, tagging_distance);
  const float my_x = loc_x[i];
  const float my_y = loc_y[i];
  int nearest = -1;
  float nearest_d2 = 0.0f;
  int within = 0;  // taggers within reach
  for (int start = 0; start < num_taggers; start += TAG_TILE) {
    const int count = min(TAG_TILE, num_taggers - start);
    tag_stage_tile(loc_x, loc_y, in_game, env, num_agents, start, count, tile_x, tile_y,
                   tile_in);
    __syncthreads();
    for (int k = 0; running && k < count; ++k) {
      if (tile_in[k] == 0) continue;
      const float d2 = tag_distance2(tile_x[k] - my_x, tile_y[k] - my_y);
      if (d2 <= reach2) {
        ++within;
        if (nearest < 0 || d2 < nearest_d2) {
          nearest = start + k;
          nearest_d2 = d2;
        }
      }
    }
    __syncthreads();
  }
  const bool caught = within >= taggers_needed;  // taggers_needed >= 1: a runner in the game
  // Several runners may credit one tagger: atomically. The sum is the same in any order,
  // since every runner adds the same tag_reward.
  if (taggers_needed > 1) {  // the same for every thread: the whole block stages the tiles
    for (int start = 0; start < num_taggers; start += TAG_TILE) {
      const int count = min(TAG_TILE, num_taggers - start);
      tag_stage_tile(loc_x, loc_y, in_game, env, num_agents, start, count, tile_x, tile_y,
                     tile_in);
      __syncthreads();
      for (int k = 0; caught && k < count; ++k) {
        if (tile_in[k] != 0 && tag_distance2(tile_x[k] - my_x, tile_y[k] - my_y) <= reach2) {
          atomicAdd(&rewards[wd_slot(env, start + k, num_agents)], tag_reward);
        }
      }
      __syncthreads();
    }
  }
  if (!caught) return;
  rewards[i] = rewards[i] + tag_penalty;
  if (taggers_needed == 1) atomicAdd(&rewards[wd_slot(env, nearest, num_agents)], tag_reward);
  if (runner_exits) {
    in_game[i] = 0;
    atomicSub(&runners_left[env], 1);
  }
}
