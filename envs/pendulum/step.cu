// Pendulum's step: one thread per environment (one agent each), gymnasium's Pendulum-v1 in
// float32. The Numba twin, line for line, is step_numba.py; the NumPy one is reference.py.
#include "wd_teach.cuh"

#define PI 3.14159265358979f
#define TWO_PI 6.28318530717959f
#define SPEED_COST 0.1f
#define TORQUE_COST 0.001f
#define OBS_SIZE 3  // cos(theta), sin(theta), theta_dot

// The angle moved into [-pi, pi): fmodf is exact, then one add.
__device__ float angle_normalize(float angle) {
  float turned = fmodf(angle + PI, TWO_PI);
  if (turned < 0.0f) turned = turned + TWO_PI;
  return turned - PI;
}

__device__ void observe(float theta, float theta_dot, float* o) {
  o[0] = cosf(theta);
  o[1] = sinf(theta);
  o[2] = theta_dot;
}

extern "C" __global__ void pendulum_step(float* theta, float* theta_dot, const float* actions,
                                         float* obs, float* rewards, int* done, int* timestep,
                                         int episode_length, float max_speed, float max_torque,
                                         float dt, float gravity_term, float torque_term,
                                         int num_agents) {
  const int env = wd_env_id();
  const int agent = wd_agent_id();
  if (agent >= num_agents) return;
  const int i = wd_slot(env, agent, num_agents);
  const float torque = fminf(fmaxf(actions[i], -max_torque), max_torque);
  const float upright = angle_normalize(theta[i]);
  const float costs = upright * upright + SPEED_COST * (theta_dot[i] * theta_dot[i]) +
                      TORQUE_COST * (torque * torque);

  float speed = theta_dot[i] + (gravity_term * sinf(theta[i]) + torque_term * torque) * dt;
  speed = fminf(fmaxf(speed, -max_speed), max_speed);
  theta[i] = theta[i] + speed * dt;
  theta_dot[i] = speed;

  rewards[i] = -costs;
  const int t = timestep[env] + 1;
  timestep[env] = t;
  done[env] = t >= episode_length;
  observe(theta[i], theta_dot[i], obs + i * OBS_SIZE);
}
