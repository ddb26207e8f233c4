// tag.cuh: what the two Tag games share (envs/tag_continuous, envs/tag_grid): reading the
// other agents of an environment tile by tile through shared memory, finding the nearest
// ones, the observation of positions, and the end of the game.
//
// It lives beside its twins; each Tag game's Env.include_dirs() puts this folder on nvcc's
// include path. The Numba twin, line for line, is envs/_tag/tag_numba.py; the NumPy one envs/_tag/tag_reference.py.
//
// Float determinism. Positions move by a product and an add (x + v * cos), distances are
// dx * dx + dy * dy. A GPU compiler fuses such a pair into one fma, rounded once, while NumPy
// rounds the product and then the sum: the last bit differs, and a runner at the tagging
// distance may be caught on one backend and not on the other. tag_mul() is a product the
// compiler never fuses (__fmul_rn), so every backend rounds alike and agrees bit for bit.
#pragma once
#include "wd_teach.cuh"

#define TAG_TILE 128         // agents staged in shared memory at a time
#define TAG_MAX_NEAREST 16   // the most neighbours an agent can see by distance
// The largest block a game launches (a game of over 1,024 agents takes several). A kernel
// that keeps arrays in registers declares __launch_bounds__(TAG_MAX_THREADS): nvcc then
// fits it in the registers a block of that many threads may have (64 a thread), where
// otherwise it might take more and fail to launch ("too many resources requested").
#define TAG_MAX_THREADS 1024

// a * b rounded to float, never fused with an add into an fma.
__device__ __forceinline__ float tag_mul(float a, float b) { return __fmul_rn(a, b); }

__device__ __forceinline__ float tag_distance2(float dx, float dy) {
  return tag_mul(dx, dx) + tag_mul(dy, dy);
}

// Copy agents [start, start + count) of this environment into shared memory: the threads of
// the block share the copying, then each of them reads all of them from there.
__device__ void tag_stage_tile(const float* loc_x, const float* loc_y, const int* in_game,
                               int env, int num_agents, int start, int count, float* tile_x,
                               float* tile_y, int* tile_in) {
  for (int k = threadIdx.x; k < count; k += blockDim.x) {
    const int j = wd_slot(env, start + k, num_agents);
    tile_x[k] = loc_x[j];
    tile_y[k] = loc_y[j];
    tile_in[k] = in_game[j];
  }
}

// Keep the num_nearest smallest distances seen so far, nearest first (an empty slot holds
// an infinite distance). The newcomer takes the first slot whose distance is strictly
// larger, and from there each slot takes the one before it: a farther one moves one place
// back. Agents come in index order, so of two at the same distance the lower index stays
// first. The loop runs over every possible slot, unrolled: each index is then a constant,
// so the arrays live in registers, not in memory (an index known only at run time would
// put them in local memory, which is far slower). Returns the distance now in the last
// slot: only an agent nearer than that can still get in.
__device__ __forceinline__ float tag_keep_nearest(float d2, int other, float* best_d2, int* best,
                                                  int num_nearest) {
  bool moving = false;
  float last = d2;
#pragma unroll
  for (int k = 0; k < TAG_MAX_NEAREST; ++k) {
    if (k < num_nearest && (moving || d2 < best_d2[k])) {
      const float d = best_d2[k];
      const int b = best[k];
      best_d2[k] = d2;
      best[k] = other;
      d2 = d;
      other = b;
      moving = true;
    }
    if (k == num_nearest - 1) last = best_d2[k];
  }
  return last;
}

// The num_nearest agents in the game nearest to `agent` (itself left out), into found[]
// (-1: no one). Every thread of the block must call it: it waits for the others at each
// tile. Threads past the last agent (active false) help copy and find nothing.
__device__ void tag_find_nearest(const float* loc_x, const float* loc_y, const int* in_game,
                                 int env, int agent, bool active, int num_agents,
                                 int num_nearest, float* tile_x, float* tile_y, int* tile_in,
                                 int* found) {
  const int i = wd_slot(env, active ? agent : 0, num_agents);
  const float my_x = loc_x[i];
  const float my_y = loc_y[i];
  float best_d2[TAG_MAX_NEAREST];  // in registers: see tag_keep_nearest
  int best[TAG_MAX_NEAREST];
#pragma unroll
  for (int k = 0; k < TAG_MAX_NEAREST; ++k) {
    best_d2[k] = INFINITY;
    best[k] = -1;
  }
  float worst = INFINITY;  // the distance in the last slot
  for (int start = 0; start < num_agents; start += TAG_TILE) {
    const int count = min(TAG_TILE, num_agents - start);
    tag_stage_tile(loc_x, loc_y, in_game, env, num_agents, start, count, tile_x, tile_y,
                   tile_in);
    __syncthreads();
    for (int k = 0; active && k < count; ++k) {
      if (start + k == agent || tile_in[k] == 0) continue;
      const float d2 = tag_distance2(tile_x[k] - my_x, tile_y[k] - my_y);
      if (d2 < worst) worst = tag_keep_nearest(d2, start + k, best_d2, best, num_nearest);
    }
    __syncthreads();  // everyone is done with this tile before the next overwrites it
  }
#pragma unroll
  for (int k = 0; k < TAG_MAX_NEAREST; ++k) {
    if (k < num_nearest) found[k] = best[k];
  }
}

// The nearest that tag_nearest_grid (nearest.cu) wrote to this agent's row of `nearest`,
// launched just before the observe kernel, into found[] as tag_find_nearest would give them.
__device__ __forceinline__ void tag_read_found(const int* row, int num_nearest, int* found) {
  for (int k = 0; k < num_nearest; ++k) found[k] = row[k];
}

// Which agent fills neighbour slot k: the k-th nearest, or, with full observation, the k-th
// other agent in index order. -1: no one.
__device__ __forceinline__ int tag_neighbor(int k, int agent, int full_observation,
                                            const int* found) {
  if (full_observation) return k < agent ? k : k + 1;
  return found[k];
}

// The first features of an agent's own block: where it is, what it is, whether it plays.
__device__ void tag_observe_self(float* o, float x, float y, float field_size, bool is_runner,
                                 int in_game) {
  o[0] = x / field_size;
  o[1] = y / field_size;
  o[2] = is_runner;
  o[3] = in_game;
}

// The first features of a neighbour's slot: it is there, where it is from me, what it is.
__device__ void tag_observe_neighbor(float* o, float dx, float dy, float field_size,
                                     bool is_runner) {
  o[0] = 1.0f;
  o[1] = dx / field_size;
  o[2] = dy / field_size;
  o[3] = is_runner;
}

__device__ void tag_clear(float* o, int size) {
  for (int f = 0; f < size; ++f) o[f] = 0.0f;
}

// After the last catch of a step: runners still playing when time is up get end_reward; the
// game is over when time is up or no runner is left.
__device__ void tag_end_game(int env, int agent, int i, bool is_runner, const int* in_game,
                             float* rewards, int* done, const int* timestep,
                             const int* runners_left, int episode_length, float end_reward) {
  const bool time_up = timestep[env] >= episode_length;
  if (time_up && is_runner && in_game[i]) rewards[i] = rewards[i] + end_reward;
  if (agent == 0) done[env] = time_up || runners_left[env] == 0;
}
