// row_writes.cu: an observation's writes alone, four ways, at the Tag games' launch shape
// (a block per env, a thread per agent, each agent's row of obs_size floats). Issue 34's
// profile found the Tag observe kernel taking 3.5 ms at 2,000 envs x 1,000 agents once the
// grid had taken its search away: 616 MB at 176 GB/s. The guess: each thread writes its
// own row, so each store of a warp lands in 32 rows obs_size floats apart (lesson 10's
// strided pattern, on writes). These kernels write the same numbers and time only that.
// The Numba twin, line for line, is row_writes_numba.py; bench/row_writes.py runs both.
#include "wd_teach.cuh"

#define ROWS_CHUNK 8        // floats of its row a lane stages at a time
#define ROWS_PITCH 9        // a lane's stride in the stage: 9 floats, so no two lanes share a bank
#define ROWS_MAX_WARPS 32   // a block of up to 1,024 threads
#define ROWS_WARP_FLOATS (4 * 32 * 77)  // rows_warp's stage: 128 threads' rows of 77 floats

// What every kernel writes at float f of row i: cheap, so that the stores are the work.
__device__ __forceinline__ float row_value(int i, int f) {
  return (float)((i * 31 + f * 7) & 1023);
}

// As the Tag observe writes: a thread writes its own row, float by float. A warp's store
// touches 32 rows at once, obs_size * 4 bytes apart.
extern "C" __global__ void rows_own(float* obs, int num_agents, int obs_size) {
  const int env = wd_env_id();
  const int agent = wd_agent_id();
  if (agent >= num_agents) return;
  const int i = wd_slot(env, agent, num_agents);
  float* o = obs + (long long)i * obs_size;
  for (int f = 0; f < obs_size; ++f) o[f] = row_value(i, f);
}

// The same rows, staged: each lane puts ROWS_CHUNK floats of its row in shared memory, then
// the warp writes its 32 rows' chunks, consecutive lanes to consecutive floats of a row:
// each store touches 32 / ROWS_CHUNK rows, not 32. A thread still makes its own row's
// numbers, as the observe must. Every thread of the block reaches every barrier.
extern "C" __global__ void rows_staged(float* obs, int num_agents, int obs_size) {
  __shared__ float stage[ROWS_MAX_WARPS * 32 * ROWS_PITCH];
  const int env = wd_env_id();
  const int agent = wd_agent_id();
  const int lane = threadIdx.x % 32;
  const int warp = threadIdx.x / 32;
  const int live = min(32, (int)blockDim.x - warp * 32);  // the lanes this warp has
  const int first = agent - lane;                           // the warp's first agent
  float* mine = stage + warp * 32 * ROWS_PITCH;
  for (int start = 0; start < obs_size; start += ROWS_CHUNK) {
    const int width = min(ROWS_CHUNK, obs_size - start);
    if (agent < num_agents) {
      const int i = wd_slot(env, agent, num_agents);
      for (int c = 0; c < width; ++c) mine[lane * ROWS_PITCH + c] = row_value(i, start + c);
    }
    __syncthreads();
    for (int e = lane; e < live * width; e += live) {  // a short last warp: its lanes only
      const int row = e / width;
      const int c = e % width;
      if (first + row < num_agents) {
        const long long at = (long long)wd_slot(env, first + row, num_agents) * obs_size;
        obs[at + start + c] = mine[row * ROWS_PITCH + c];
      }
    }
    __syncthreads();
  }
}

// The ceiling: a block's rows are one contiguous run of memory, written float by float by
// consecutive threads. Each thread works out any float's number itself, which the observe
// cannot (an agent's row needs that agent's search): the bytes' own speed, for comparison.
extern "C" __global__ void rows_flat(float* obs, int num_agents, int obs_size) {
  const int env = wd_env_id();
  const int first = blockIdx.y * blockDim.x;
  const int count = min((int)blockDim.x, num_agents - first);
  if (count <= 0) return;
  float* run = obs + (long long)wd_slot(env, first, num_agents) * obs_size;
  for (int e = threadIdx.x; e < count * obs_size; e += blockDim.x) {
    run[e] = row_value(wd_slot(env, first + e / obs_size, num_agents), e % obs_size);
  }
}

// A warp's 32 rows are one run of memory (32 x obs_size floats): each lane puts its whole
// row in shared memory, then the warp writes the run with consecutive lanes on consecutive
// floats, as rows_flat does. A thread still makes only its own row's numbers. The stage
// holds 128 threads' rows of 77 floats (39,424 bytes): 1,024 threads would need 315 KB,
// more than a block can have, so this kernel runs with blocks of 128 (several an env);
// a block too large for its stage writes nothing, which the check against NumPy shows.
extern "C" __global__ void rows_warp(float* obs, int num_agents, int obs_size) {
  __shared__ float stage[ROWS_WARP_FLOATS];
  if ((int)blockDim.x * obs_size > ROWS_WARP_FLOATS) return;  // the whole block: uniform
  const int env = wd_env_id();
  const int agent = wd_agent_id();
  const int lane = threadIdx.x % 32;
  const int first = agent - lane;                         // the warp's first agent
  const int live = min(32, (int)blockDim.x - (int)(threadIdx.x / 32) * 32);  // its lanes
  const int rows = max(0, min(live, num_agents - first));  // a lane's, and only agents there are
  float* mine = stage + (threadIdx.x / 32) * 32 * obs_size;
  if (agent < num_agents) {
    const int i = wd_slot(env, agent, num_agents);
    for (int f = 0; f < obs_size; ++f) mine[lane * obs_size + f] = row_value(i, f);
  }
  __syncthreads();  // every thread of the block reaches it
  float* run = obs + (long long)wd_slot(env, first, num_agents) * obs_size;
  for (int e = lane; e < rows * obs_size; e += live) run[e] = mine[e];  // a short warp too
}
