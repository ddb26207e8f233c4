"""The races' Numba kernels: the twins of kernels.cu, line for line.

Every thread of an environment adds 1 to the environment's counter, once with a plain +=
(read, add, write: threads that read the same old value lose each other's adds) and once
with cuda.atomic.add (one step that no other thread can split).
"""

from numba import cuda

from wd_teach.numba_index import agent_id, env_id


@cuda.jit
def count_plain(hits, num_agents):
    if agent_id() >= num_agents:
        return
    hits[env_id()] += 1


@cuda.jit
def count_atomic(hits, num_agents):
    if agent_id() >= num_agents:
        return
    cuda.atomic.add(hits, env_id(), 1)
