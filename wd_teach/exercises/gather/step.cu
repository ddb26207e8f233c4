// Gather's step: one block per environment, one thread per agent. First every agent moves;
// then the block waits at a barrier; then every agent reads every position to find the
// centre. The Numba twin, line for line, is step_numba.py; the NumPy one is reference.py.
#include "wd_teach.cuh"

// The centre of environment `env`: its agents' positions added in index order (the order
// of the NumPy reference, so every backend rounds alike), divided by their number.
__device__ float group_centre(const float* pos, int env, int num_agents) {
  float total = 0.0f;
  for (int other = 0; other < num_agents; other++) total += pos[wd_slot(env, other, num_agents)];
  return total / num_agents;
}

extern "C" __global__ void gather_step(float* pos, const float* moves, const int* actions,
                                       float* obs, float* rewards, int* done, int* timestep,
                                       int episode_length, float length, int num_agents) {
  const int env = wd_env_id();
  const int agent = wd_agent_id();
  // No early return: every thread of the block must reach the barrier below.
  const bool active = agent < num_agents;
  const int i = wd_slot(env, agent, num_agents);
  if (active) {  // 1. move: each agent writes only its own position
    pos[i] = fminf(fmaxf(pos[i] + moves[actions[i]], 0.0f), length);
  }
  __syncthreads();  // 2. wait: every agent of the block has moved
  if (active) {     // 3. read: every agent reads every new position
    const float centre = group_centre(pos, env, num_agents);
    rewards[i] = -fabsf(centre - pos[i]) / length;
    obs[i * 2 + 0] = pos[i] / length;
    obs[i * 2 + 1] = (centre - pos[i]) / length;
  }
  if (agent == 0) {  // one thread per environment counts the step
    const int t = timestep[env] + 1;
    timestep[env] = t;
    done[env] = t >= episode_length;
  }
}
