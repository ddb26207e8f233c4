// Speaker and listener: one thread per agent, two kernels a step (env.py says why). The Numba
// twin, line for line, is step_numba.py; the NumPy one is reference.py.
#include "wd_teach.cuh"

#define NUM_LANDMARKS 5
#define OBS_WIDTH (2 + 3 * NUM_LANDMARKS)  // the store's obs row: the listener's size
#define SPEAKER 0
#define LISTENER 1

// The speaker says its word and keeps the clock; the listener moves, staying on the grid.
extern "C" __global__ void speaker_listener_act(const int* actions, int* word, int* listener_x,
                                                int* listener_y, const int* move_x,
                                                const int* move_y, int* done, int* timestep,
                                                int grid_size, int episode_length,
                                                int num_agents) {
  const int env = wd_env_id();
  const int agent = wd_agent_id();
  if (agent >= num_agents) return;
  const int action = actions[wd_slot(env, agent, num_agents)];
  if (agent == SPEAKER) {
    word[env] = action;
    const int t = timestep[env] + 1;
    timestep[env] = t;
    done[env] = t >= episode_length;
  } else {
    listener_x[env] = min(max(listener_x[env] + move_x[action], 0), grid_size - 1);
    listener_y[env] = min(max(listener_y[env] + move_y[action], 0), grid_size - 1);
  }
}

// Each agent writes its own observation; both write the same reward, the listener's distance
// to the goal landmark.
extern "C" __global__ void speaker_listener_observe(const int* landmark_x, const int* landmark_y,
                                                    const int* goal, const int* listener_x,
                                                    const int* listener_y, const int* word,
                                                    float* obs, float* rewards, float cell_scale,
                                                    float reward_scale, int num_agents) {
  const int env = wd_env_id();
  const int agent = wd_agent_id();
  if (agent >= num_agents) return;
  const int i = wd_slot(env, agent, num_agents);
  float* o = obs + i * OBS_WIDTH;
  const int x = listener_x[env];
  const int y = listener_y[env];
  const int g = goal[env];
  if (agent == SPEAKER) {
    for (int k = 0; k < OBS_WIDTH; k++) o[k] = 0.0f;
    o[g] = 1.0f;
  } else {
    o[0] = (float)x / cell_scale;
    o[1] = (float)y / cell_scale;
    for (int k = 0; k < NUM_LANDMARKS; k++) {
      o[2 + 2 * k] = (float)(landmark_x[env * NUM_LANDMARKS + k] - x) / cell_scale;
      o[3 + 2 * k] = (float)(landmark_y[env * NUM_LANDMARKS + k] - y) / cell_scale;
    }
    for (int k = 0; k < NUM_LANDMARKS; k++) o[2 + 2 * NUM_LANDMARKS + k] = 0.0f;
    const int w = word[env];
    if (w >= 0) o[2 + 2 * NUM_LANDMARKS + w] = 1.0f;
  }
  const int distance = abs(x - landmark_x[env * NUM_LANDMARKS + g]) +
                       abs(y - landmark_y[env * NUM_LANDMARKS + g]);
  rewards[i] = -(float)distance / reward_scale;
}
