// fast.cuh: speed only, behind the fast door (wd_teach.floors). What the Tag games' observe
// twins share (envs/tag_continuous/observe_fast.cu, envs/tag_grid/observe_fast.cu): a block's
// rows staged in shared memory, then each warp's rows written as the one run of memory they
// are. The first of those files says why; the Numba twin of this one is fast_numba.py.
#pragma once
#include "wd_teach.cuh"

#define FAST_STAGE_FLOATS 10240  // 40 KB: a block's observation rows
#define FAST_STAGE_INTS 1536     // 6 KB: its `nearest` rows

// A warp's rows, from the stage to global memory as one run: `rows` rows of `width`.
template <typename T>
__device__ __forceinline__ void fast_write_run(T* run, const T* staged, int rows, int width,
                                               int lane, int live) {
  for (int e = lane; e < rows * width; e += live) run[e] = staged[e];
}

// After the block's barrier, with every row of it staged: this thread's warp writes its rows
// of obs and of nearest, one a lane, and only the agents there are (a block of fewer than 32
// threads ends its warp early, and the next block writes the rows after it).
__device__ __forceinline__ void fast_write_rows(float* obs, int* nearest, const float* stage,
                                                const int* stage_shown, int env, int agent,
                                                int num_agents, int obs_size,
                                                int num_neighbors) {
  const int lane = threadIdx.x % 32;
  const int first = agent - lane;  // the warp's first agent
  const int live = min(32, (int)blockDim.x - (int)(threadIdx.x - lane));  // its lanes
  const int rows = max(0, min(live, num_agents - first));
  if (rows == 0) return;
  const long long at = wd_slot(env, first, num_agents);
  fast_write_run(obs + at * obs_size, stage + (threadIdx.x - lane) * obs_size, rows, obs_size,
                 lane, live);
  fast_write_run(nearest + at * num_neighbors,
                 stage_shown + (threadIdx.x - lane) * num_neighbors, rows, num_neighbors, lane,
                 live);
}
