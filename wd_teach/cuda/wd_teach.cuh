// wd_teach.cuh: where a CUDA thread sits in the grid that wd_teach launches.
//
// One row of blocks per environment (blockIdx.x), and one thread per agent. When an
// environment has more agents than a block holds, it gets several blocks (blockIdx.y).
// The Numba twins of these helpers are in wd_teach/numba_index.py.
#pragma once

// Which environment this thread works on.
__device__ __forceinline__ int wd_env_id() { return blockIdx.x; }

// Which agent of that environment this thread works on (may be >= num_agents in the
// last block of an environment: check before you touch memory).
__device__ __forceinline__ int wd_agent_id() { return blockIdx.y * blockDim.x + threadIdx.x; }

// The flat index of (env, agent) in an array stored per="agent".
__device__ __forceinline__ int wd_slot(int env, int agent, int num_agents) {
  return env * num_agents + agent;
}
