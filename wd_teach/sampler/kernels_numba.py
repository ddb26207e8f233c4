"""The action sampler's Numba kernels: the twins of wd_teach/sampler/kernels.cu, line for line.

One difference of form: a CUDA C kernel sees every array as a flat pointer, a Numba kernel
sees its shape. `probs[env, agent]` is this agent's row, as `probs + slot * row_length` is in
C. `actions` is [envs, agents] with one head and [envs, agents, heads] with several; Numba
compiles a kernel for each shape it meets, and `store_action` keeps only the branch that fits
(`actions.ndim` is known when the kernel compiles), where C writes `actions[slot * heads + head]`.
"""

import numpy as np
from numba import cuda

from wd_teach.numba_index import agent_id, env_id
from wd_teach.rng.kernels_numba import uniform


@cuda.jit(device=True)
def draw_from_cdf(probs, u):
    """The inverse-CDF draw: add up probabilities until the running sum passes u."""
    cumulative = np.float32(0.0)
    last_possible = 0  # the last action with p > 0
    for action in range(probs.shape[0]):
        p = probs[action]
        if p > np.float32(0.0):
            last_possible = action
        cumulative += p
        if u < cumulative:
            return action
    return last_possible  # the row summed to a hair under 1 and u fell past its end


@cuda.jit(device=True)
def most_probable(probs):
    """The most probable action (the first of equals): evaluation, without exploring."""
    best = 0
    for action in range(1, probs.shape[0]):
        if probs[action] > probs[best]:
            best = action
    return best


@cuda.jit(device=True)
def store_action(actions, env, agent, head, action):
    """actions[env, agent] with one head, actions[env, agent, head] with several."""
    if actions.ndim == 2:
        actions[env, agent] = action
    else:
        actions[env, agent, head] = action


@cuda.jit
def sample_actions(probs, actions, rng_counter, rng_key, head_offsets, num_heads, num_agents):
    env = env_id()
    agent = agent_id()
    if agent >= num_agents:
        return
    row = probs[env, agent]  # this agent's row
    draw = rng_counter[env, agent]
    for head in range(num_heads):
        u = uniform(agent, env, draw, head, rng_key)
        begin = head_offsets[head]
        end = head_offsets[head + 1]
        store_action(actions, env, agent, head, draw_from_cdf(row[begin:end], u))
    rng_counter[env, agent] = draw + np.uint32(1)  # the next launch draws new numbers


@cuda.jit
def argmax_actions(probs, actions, head_offsets, num_heads, num_agents):
    env = env_id()
    agent = agent_id()
    if agent >= num_agents:
        return
    row = probs[env, agent]  # this agent's row
    for head in range(num_heads):
        begin = head_offsets[head]
        end = head_offsets[head + 1]
        store_action(actions, env, agent, head, most_probable(row[begin:end]))
