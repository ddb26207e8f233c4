"""Where a CUDA thread sits in the grid that wd_teach launches: the Numba twins of
wd_teach/cuda/wd_teach.cuh, line for line.

One row of blocks per environment (blockIdx.x) and one thread per agent; an environment
with more agents than a block holds gets several blocks (blockIdx.y).
"""

from numba import cuda


@cuda.jit(device=True)
def env_id():
    """Which environment this thread works on."""
    return cuda.blockIdx.x


@cuda.jit(device=True)
def agent_id():
    """Which agent of that environment (may be >= num_agents in an environment's last block)."""
    return cuda.blockIdx.y * cuda.blockDim.x + cuda.threadIdx.x


@cuda.jit(device=True)
def slot(env, agent, num_agents):
    """The flat index of (env, agent) in an array stored per="agent"."""
    return env * num_agents + agent
