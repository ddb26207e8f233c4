// MountainCarContinuous's step: one thread per environment (one agent each), gymnasium's
// MountainCarContinuous-v0 in float32. The Numba twin, line for line, is step_numba.py; the
// NumPy one is reference.py.
#include "wd_teach.cuh"

#define THREE 3.0f
#define ZERO 0.0f
#define GOAL_REWARD 100.0f
#define ACTION_COST 0.1f
#define OBS_SIZE 2  // position, velocity

extern "C" __global__ void mountain_car_continuous_step(
    float* position, float* velocity, const float* actions, float* obs, float* rewards,
    int* done, int* timestep, int episode_length, float min_position, float max_position,
    float max_speed, float goal_position, float goal_velocity, float max_action, float power,
    float gravity, int num_agents) {
  const int env = wd_env_id();
  const int agent = wd_agent_id();
  if (agent >= num_agents) return;
  const int i = wd_slot(env, agent, num_agents);
  const float action = actions[i];
  const float force = fminf(fmaxf(action, -max_action), max_action);
  float speed = velocity[i] + force * power - gravity * cosf(THREE * position[i]);
  speed = fminf(fmaxf(speed, -max_speed), max_speed);
  const float place = fminf(fmaxf(position[i] + speed, min_position), max_position);
  if (place == min_position && speed < ZERO) speed = ZERO;  // the left wall
  position[i] = place;
  velocity[i] = speed;

  const bool arrived = place >= goal_position && speed >= goal_velocity;
  rewards[i] = (arrived ? GOAL_REWARD : ZERO) - ACTION_COST * (action * action);
  const int t = timestep[env] + 1;
  timestep[env] = t;
  done[env] = arrived || t >= episode_length;
  float* o = obs + i * OBS_SIZE;
  o[0] = position[i];
  o[1] = velocity[i];
}
