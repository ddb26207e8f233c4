// CartPole's step: one thread per environment (one agent each), gymnasium's CartPole-v1 in
// float32. The Numba twin, line for line, is step_numba.py; the NumPy one is reference.py.
#include "wd_teach.cuh"

#define FOUR_THIRDS (4.0f / 3.0f)
#define OBS_SIZE 4  // x, x_dot, theta, theta_dot

extern "C" __global__ void cartpole_step(float* x, float* x_dot, float* theta, float* theta_dot,
                                         const int* actions, float* obs, float* rewards,
                                         int* done, int* timestep, int episode_length,
                                         float gravity, float mass_pole, float total_mass,
                                         float half_pole_length, float polemass_length,
                                         float force, float tau, float x_threshold,
                                         float theta_threshold, int num_agents) {
  const int env = wd_env_id();
  const int agent = wd_agent_id();
  if (agent >= num_agents) return;
  const int i = wd_slot(env, agent, num_agents);
  const float push = actions[i] == 1 ? force : -force;
  const float costheta = cosf(theta[i]);
  const float sintheta = sinf(theta[i]);

  const float temp = (push + polemass_length * (theta_dot[i] * theta_dot[i]) * sintheta) /
                     total_mass;
  const float thetaacc = (gravity * sintheta - costheta * temp) / (
      half_pole_length * (FOUR_THIRDS - mass_pole * (costheta * costheta) / total_mass));
  const float xacc = temp - polemass_length * thetaacc * costheta / total_mass;

  x[i] = x[i] + tau * x_dot[i];  // Euler: every update reads the state before the step
  x_dot[i] = x_dot[i] + tau * xacc;
  theta[i] = theta[i] + tau * theta_dot[i];
  theta_dot[i] = theta_dot[i] + tau * thetaacc;

  const bool fallen = x[i] < -x_threshold || x[i] > x_threshold || theta[i] < -theta_threshold ||
                      theta[i] > theta_threshold;
  rewards[i] = 1.0f;
  const int t = timestep[env] + 1;
  timestep[env] = t;
  done[env] = fallen || t >= episode_length;
  float* o = obs + i * OBS_SIZE;
  o[0] = x[i];
  o[1] = x_dot[i];
  o[2] = theta[i];
  o[3] = theta_dot[i];
}
