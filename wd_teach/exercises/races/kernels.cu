// wd_teach/exercises/races/kernels.cu: every thread of an environment adds 1 to the
// environment's counter, once with a plain += and once with an atomic (notebook 06).
// The Numba twin, line for line, is kernels_numba.py beside this file.
#include "wd_teach.cuh"

// A plain += is three steps: read the counter, add 1, write it back. Threads that read the
// same old value all write the same new value, and all their adds but one are lost.
extern "C" __global__ void count_plain(int* hits, int num_agents) {
  if (wd_agent_id() >= num_agents) return;
  hits[wd_env_id()] += 1;
}

// atomicAdd does the read, the add and the write as one step that no other thread can
// split: every add counts, in whatever order the threads come.
extern "C" __global__ void count_atomic(int* hits, int num_agents) {
  if (wd_agent_id() >= num_agents) return;
  atomicAdd(&hits[wd_env_id()], 1);
}
