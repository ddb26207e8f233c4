"""The smallest end-to-end example: agents drift with their velocity, x <- x + v * dt.

The same step three ways, line for line: CUDA C for PyCUDA, Numba, and NumPy as the
reference that both are checked against. `wd-teach demo` runs it on every backend.
"""

import numpy as np
from numba import cuda

from wd_teach.numba_index import agent_id, env_id

DEMO_CUDA_C = r"""
#include "wd_teach.cuh"

extern "C" __global__ void move(float* pos, const float* vel, float dt, int num_agents) {
  const int env = wd_env_id();
  const int agent = wd_agent_id();
  if (agent >= num_agents) return;
  const int i = wd_slot(env, agent, num_agents);
  pos[i] += vel[i] * dt;
}
"""


@cuda.jit
def move(pos, vel, dt, num_agents):
    env = env_id()
    agent = agent_id()
    if agent >= num_agents:
        return
    pos[env, agent] += vel[env, agent] * dt



def reference_move(pos: np.ndarray, vel: np.ndarray, dt: float) -> np.ndarray:
    return (pos + vel * np.float32(dt)).astype(np.float32)
