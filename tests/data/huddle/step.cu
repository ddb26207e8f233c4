// Huddle's step: one block per environment, one thread per agent. Every agent moves, then
// the block waits at a barrier, then every agent reads every position to find the centre.
// The Numba twin, line for line, is step_numba.py; the NumPy one is reference.py.
#include "wd_teach.cuh"

#define MAX_AGENTS 1024  // one block: the most threads a block holds

extern "C" __global__ void huddle_step(float* pos, const int* actions, float* obs,
                                       float* rewards, int* done, int* timestep,
                                       int episode_length, float length, float step_size,
                                       int num_agents) {
  __shared__ float moved[MAX_AGENTS];  // this environment's positions after the move
  const int env = wd_env_id();
  const int agent = wd_agent_id();
  // No early return: every thread of the block must reach the barrier below.
  const bool active = agent < num_agents;
  const int i = wd_slot(env, agent, num_agents);
  if (active) {
    pos[i] = fminf(fmaxf(pos[i] + (actions[i] - 1) * step_size, 0.0f), length);
    moved[agent] = pos[i];
  }
  __syncthreads();  // every agent has moved before any agent reads the others
  if (active) {
    float total = 0.0f;
    for (int other = 0; other < num_agents; other++) total += moved[other];
    const float centre = total / num_agents;
    rewards[i] = -fabsf(centre - pos[i]) / length;
    obs[i * 2] = pos[i] / length;
    obs[i * 2 + 1] = (centre - pos[i]) / length;
  }
  if (agent == 0) {
    const int t = timestep[env] + 1;
    timestep[env] = t;
    done[env] = t >= episode_length;
  }
}
