// Tag on a grid: the move and the observation; the catch between them is tag_catch in
// envs/_tag/tag.cu (a tagging distance of 0: the same cell). One block per environment,
// one thread per agent. The Numba twin, line for line, is step_numba.py; the NumPy one is
// reference.py.
#include "tag.cuh"

// One cell up, down, left or right, or stay; not past the edge. The step's first rewards.
extern "C" __global__ void tag_grid_move(float* loc_x, float* loc_y, const int* in_game,
                                         const int* actions, float* rewards, int* timestep,
                                         const int* move_x, const int* move_y, int num_agents,
                                         int num_taggers, float field_size,
                                         float tagger_step_reward, float runner_step_reward,
                                         float edge_penalty) {
  const int env = wd_env_id();
  const int agent = wd_agent_id();
  if (agent >= num_agents) return;
  if (agent == 0) timestep[env] = timestep[env] + 1;
  const int i = wd_slot(env, agent, num_agents);
  if (in_game[i] == 0) {
    rewards[i] = 0.0f;
    return;
  }
  float x = loc_x[i] + move_x[actions[i]];
  float y = loc_y[i] + move_y[actions[i]];
  const bool hit = x < 0.0f || x > field_size || y < 0.0f || y > field_size;
  loc_x[i] = fminf(fmaxf(x, 0.0f), field_size);
  loc_y[i] = fminf(fmaxf(y, 0.0f), field_size);
  float reward = agent < num_taggers ? tagger_step_reward : runner_step_reward;
  if (hit) reward = reward + edge_penalty;
  rewards[i] = reward;
}

// Every agent's observation: the shared position features, for its own block and for each
// neighbour slot, and which agent each slot shows (nearest). The nearest are found here, or
// (search_grid) were found by tag_nearest_grid just before. Then the end of the game.
extern "C" __global__ void __launch_bounds__(TAG_MAX_THREADS)
    tag_grid_observe(const float* loc_x, const float* loc_y, const int* in_game, float* obs,
        int* nearest, float* rewards, int* done, const int* timestep, const int* runners_left,
        int num_agents, int num_taggers, int num_neighbors, int full_observation,
        int search_grid, int obs_size, int own_size, int episode_length, float field_size,
        float end_reward) {
  __shared__ float tile_x[TAG_TILE];
  __shared__ float tile_y[TAG_TILE];
  __shared__ int tile_in[TAG_TILE];
  int found[TAG_MAX_NEAREST];
  const int env = wd_env_id();
  const int agent = wd_agent_id();
  const bool active = agent < num_agents;
  if (!full_observation && !search_grid) {
    tag_find_nearest(loc_x, loc_y, in_game, env, agent, active, num_agents, num_neighbors,
                     tile_x, tile_y, tile_in, found);
  }
  if (!active) return;
  const int i = wd_slot(env, agent, num_agents);
  int* shown = nearest + (long long)i * num_neighbors;
  if (!full_observation && search_grid) tag_read_found(shown, num_neighbors, found);
  float* o = obs + (long long)i * obs_size;
  tag_observe_self(o, loc_x[i], loc_y[i], field_size, agent >= num_taggers, in_game[i]);
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
  }
  tag_end_game(env, agent, i, agent >= num_taggers, in_game, rewards, done, timestep,
               runners_left, episode_length, end_reward);
}
