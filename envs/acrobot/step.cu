// Acrobot's step: one thread per environment (one agent each), gymnasium's Acrobot-v1 (the
// book's equations, one RK4 step per env step) in float32. The Numba twin, line for line,
// is step_numba.py; the NumPy one is reference.py.
#include "wd_teach.cuh"

#define PI 3.14159265358979f
#define TWO_PI 6.28318530717959f
#define HALF_PI 1.57079632679490f
#define HALF 0.5f
#define TWO 2.0f
#define SIX 6.0f
#define ONE 1.0f
#define OBS_SIZE 6  // cos(theta1), sin(theta1), cos(theta2), sin(theta2), dtheta1, dtheta2

// A state (theta1, theta2, dtheta1, dtheta2), or its rate of change.
struct Links {
  float theta1, theta2, dtheta1, dtheta2;
};

// The dynamics' terms that depend on the config only (Acrobot.constants()).
struct Dynamics {
  float d1_base, d2_base, coupling, phi1_term, phi2_term;
};

// The rate of change of the state s: gymnasium's book equations of the two links.
__device__ Links derivative(Links s, float torque, Dynamics c) {
  const float cos2 = cosf(s.theta2);
  const float sin2 = sinf(s.theta2);
  const float d1 = c.d1_base + TWO * c.coupling * cos2;
  const float d2 = c.d2_base + c.coupling * cos2;
  const float phi2 = c.phi2_term * cosf(s.theta1 + s.theta2 - HALF_PI);
  const float phi1 = -c.coupling * (s.dtheta2 * s.dtheta2) * sin2 -
                     TWO * c.coupling * s.dtheta2 * s.dtheta1 * sin2 +
                     c.phi1_term * cosf(s.theta1 - HALF_PI) + phi2;
  const float ddtheta2 = (torque + d2 / d1 * phi1 - c.coupling * (s.dtheta1 * s.dtheta1) * sin2 -
                          phi2) / (c.d2_base - d2 * d2 / d1);
  const float ddtheta1 = -(d2 * ddtheta2 + phi1) / d1;
  return {s.dtheta1, s.dtheta2, ddtheta1, ddtheta2};
}

// s + h * k, one variable at a time: the trial state of a Runge-Kutta stage.
__device__ Links moved(Links s, Links k, float h) {
  return {s.theta1 + h * k.theta1, s.theta2 + h * k.theta2, s.dtheta1 + h * k.dtheta1,
          s.dtheta2 + h * k.dtheta2};
}

__device__ float rk4_sum(float y, float k1, float k2, float k3, float k4, float sixth) {
  return y + sixth * (k1 + TWO * k2 + TWO * k3 + k4);
}

// One classic Runge-Kutta step of dt: four slopes, weighted 1, 2, 2, 1.
__device__ Links rk4(Links s, float torque, float dt, Dynamics c) {
  const float half = HALF * dt;
  const Links k1 = derivative(s, torque, c);
  const Links k2 = derivative(moved(s, k1, half), torque, c);
  const Links k3 = derivative(moved(s, k2, half), torque, c);
  const Links k4 = derivative(moved(s, k3, dt), torque, c);
  const float sixth = dt / SIX;
  return {rk4_sum(s.theta1, k1.theta1, k2.theta1, k3.theta1, k4.theta1, sixth),
          rk4_sum(s.theta2, k1.theta2, k2.theta2, k3.theta2, k4.theta2, sixth),
          rk4_sum(s.dtheta1, k1.dtheta1, k2.dtheta1, k3.dtheta1, k4.dtheta1, sixth),
          rk4_sum(s.dtheta2, k1.dtheta2, k2.dtheta2, k3.dtheta2, k4.dtheta2, sixth)};
}

// The angle moved into [-pi, pi] by whole turns, one at a time (as gymnasium does).
__device__ float wrap(float angle) {
  while (angle > PI) angle = angle - TWO_PI;
  while (angle < -PI) angle = angle + TWO_PI;
  return angle;
}

__device__ void observe(float theta1, float theta2, float dtheta1, float dtheta2, float* o) {
  o[0] = cosf(theta1);
  o[1] = sinf(theta1);
  o[2] = cosf(theta2);
  o[3] = sinf(theta2);
  o[4] = dtheta1;
  o[5] = dtheta2;
}

extern "C" __global__ void acrobot_step(float* theta1, float* theta2, float* dtheta1,
                                        float* dtheta2, const int* actions, float* obs,
                                        float* rewards, int* done, int* timestep,
                                        int episode_length, float dt, float max_vel_1,
                                        float max_vel_2, float d1_base, float d2_base,
                                        float coupling, float phi1_term, float phi2_term,
                                        int num_agents) {
  const int env = wd_env_id();
  const int agent = wd_agent_id();
  if (agent >= num_agents) return;
  const int i = wd_slot(env, agent, num_agents);
  const float torque = (float)(actions[i] - 1);  // -1, 0 or +1
  const Dynamics dynamics = {d1_base, d2_base, coupling, phi1_term, phi2_term};
  const Links s = rk4({theta1[i], theta2[i], dtheta1[i], dtheta2[i]}, torque, dt, dynamics);
  theta1[i] = wrap(s.theta1);
  theta2[i] = wrap(s.theta2);
  dtheta1[i] = fminf(fmaxf(s.dtheta1, -max_vel_1), max_vel_1);
  dtheta2[i] = fminf(fmaxf(s.dtheta2, -max_vel_2), max_vel_2);

  // The tip above the line: one link's length above the shoulder.
  const bool up = -cosf(theta1[i]) - cosf(theta2[i] + theta1[i]) > ONE;
  rewards[i] = up ? 0.0f : -1.0f;
  const int t = timestep[env] + 1;
  timestep[env] = t;
  done[env] = up || t >= episode_length;
  observe(theta1[i], theta2[i], dtheta1[i], dtheta2[i], obs + i * OBS_SIZE);
}
