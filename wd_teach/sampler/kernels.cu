// wd_teach/sampler/kernels.cu: each agent's action drawn from its policy's probabilities, one thread per agent.
//
// Arrays, by their names in the data store:
//   probs         [envs, agents, row_length]    float         every head's probabilities, side by side
//   actions       [envs, agents] or [.., heads] int           one action per head
//   rng_counter   [envs, agents]                unsigned int  how many draws this thread has made
//   rng_key       [2]                           unsigned int  the seed, Philox's key
//   head_offsets  [heads + 1]                   int           where each head starts in a row
// The Numba twin, line for line, is wd_teach/sampler/kernels_numba.py.
#include "wd_teach.cuh"
#include "../rng/kernels.cuh"  // wd_teach/rng/kernels.cuh

// The inverse-CDF draw: add up probabilities until the running sum passes u.
__device__ int draw_from_cdf(const float* probs, int num_actions, float u) {
  float cumulative = 0.0f;
  int last_possible = 0;  // the last action with p > 0
  for (int action = 0; action < num_actions; ++action) {
    const float p = probs[action];
    if (p > 0.0f) last_possible = action;
    cumulative += p;
    if (u < cumulative) return action;
  }
  return last_possible;  // the row summed to a hair under 1 and u fell past its end
}

// The most probable action (the first of equals): evaluation, without exploring.
__device__ int most_probable(const float* probs, int num_actions) {
  int best = 0;
  for (int action = 1; action < num_actions; ++action) {
    if (probs[action] > probs[best]) best = action;
  }
  return best;
}

extern "C" __global__ void sample_actions(const float* __restrict__ probs,
                                          int* __restrict__ actions,
                                          unsigned int* __restrict__ rng_counter,
                                          const unsigned int* __restrict__ rng_key,
                                          const int* __restrict__ head_offsets,
                                          int num_heads, int num_agents) {
  const int env = wd_env_id();
  const int agent = wd_agent_id();
  if (agent >= num_agents) return;
  const int slot = wd_slot(env, agent, num_agents);
  const float* row = probs + (long long)slot * head_offsets[num_heads];  // this agent's row
  const unsigned int draw = rng_counter[slot];
  for (int head = 0; head < num_heads; ++head) {
    const float u = wd_uniform(agent, env, draw, head, rng_key);
    const int begin = head_offsets[head];
    const int end = head_offsets[head + 1];
    actions[(long long)slot * num_heads + head] = draw_from_cdf(row + begin, end - begin, u);
  }
  rng_counter[slot] = draw + 1;  // the next launch draws new numbers
}

extern "C" __global__ void argmax_actions(const float* __restrict__ probs,
                                          int* __restrict__ actions,
                                          const int* __restrict__ head_offsets,
                                          int num_heads, int num_agents) {
  const int env = wd_env_id();
  const int agent = wd_agent_id();
  if (agent >= num_agents) return;
  const int slot = wd_slot(env, agent, num_agents);
  const float* row = probs + (long long)slot * head_offsets[num_heads];  // this agent's row
  for (int head = 0; head < num_heads; ++head) {
    const int begin = head_offsets[head];
    const int end = head_offsets[head + 1];
    actions[(long long)slot * num_heads + head] = most_probable(row + begin, end - begin);
  }
}
