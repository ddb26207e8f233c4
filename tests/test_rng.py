"""Philox4x32-10: the published answers, and the same bits from NumPy, Numba and CUDA C."""

import numpy as np
import pytest
from numba import cuda

from wd_teach import DataStore, KernelLauncher, SamplerError, cuda_c
from wd_teach.device import nvcc_path
from wd_teach.numba_index import agent_id, env_id
from wd_teach.rng.kernels_numba import philox4x32_10 as philox_numba
from wd_teach.rng.kernels_numba import uniform
from wd_teach.rng.reference import (
    MAX_SEED,
    key_from_seed,
    philox4x32_10,
    thread_uniforms,
    uniform_from_bits,
)

# Random123's known-answer vectors for Philox4x32-10: counter, key, result.
KNOWN_ANSWERS = [
    ((0, 0, 0, 0), (0, 0), (0x6627E8D5, 0xE169C58D, 0xBC57AC4C, 0x9B00DBD8)),
    ((0xFFFFFFFF,) * 4, (0xFFFFFFFF,) * 2, (0x408F276D, 0x41C83B0E, 0xA20BC7C6, 0x6D5451FD)),
    ((0x243F6A88, 0x85A308D3, 0x13198A2E, 0x03707344), (0xA4093822, 0x299F31D0),
     (0xD16CFE09, 0x94FDCCEB, 0x5001E420, 0x24126EA1)),
]

# Each thread runs Philox on its own counter and key: the device generator, word for word.
PHILOX_CUDA_C = r"""
#include "wd_teach.cuh"
#include "../rng/kernels.cuh"
extern "C" __global__ void philox_words(unsigned int* words, const unsigned int* counters,
                                        const unsigned int* keys, int num_agents) {
  const int agent = wd_agent_id();
  if (agent >= num_agents) return;
  const int i = wd_slot(wd_env_id(), agent, num_agents);
  const uint4 out = wd_philox4x32_10(counters[4 * i], counters[4 * i + 1], counters[4 * i + 2],
                                     counters[4 * i + 3], keys[2 * i], keys[2 * i + 1]);
  words[4 * i] = out.x;
  words[4 * i + 1] = out.y;
  words[4 * i + 2] = out.z;
  words[4 * i + 3] = out.w;
}

extern "C" __global__ void thread_uniform(float* u, const unsigned int* draws,
                                          const unsigned int* key, int num_agents) {
  const int env = wd_env_id();
  const int agent = wd_agent_id();
  if (agent >= num_agents) return;
  const int i = wd_slot(env, agent, num_agents);
  u[i] = wd_uniform(agent, env, draws[i], 0, key);
}
"""


@cuda.jit
def philox_words(words, counters, keys, num_agents):
    env = env_id()
    agent = agent_id()
    if agent >= num_agents:
        return
    c = counters[env, agent]
    k = keys[env, agent]
    out = philox_numba(np.uint64(c[0]), np.uint64(c[1]), np.uint64(c[2]), np.uint64(c[3]),
                       np.uint64(k[0]), np.uint64(k[1]))
    for w in range(4):
        words[env, agent, w] = out[w]


@cuda.jit
def thread_uniform(u, draws, key, num_agents):
    env = env_id()
    agent = agent_id()
    if agent >= num_agents:
        return
    u[env, agent] = uniform(agent, env, draws[env, agent], 0, key)


def launcher_for(store, backend):
    launcher = KernelLauncher(store, backend)
    launcher.load(PHILOX_CUDA_C if backend == "pycuda" else [philox_words, thread_uniform])
    return launcher


@pytest.mark.parametrize("counter, key, want", KNOWN_ANSWERS)
def test_numpy_reference_gives_the_published_answers(counter, key, want):
    np.testing.assert_array_equal(philox4x32_10(counter, key), np.array(want, np.uint32))


def test_device_generator_matches_numpy_bit_for_bit(backend):
    rng = np.random.default_rng(3)
    envs, agents = 3, 4
    counters = rng.integers(0, 2**32, (envs, agents, 4), dtype=np.uint64).astype(np.uint32)
    keys = rng.integers(0, 2**32, (envs, agents, 2), dtype=np.uint64).astype(np.uint32)
    for slot, (counter, key, _) in enumerate(KNOWN_ANSWERS):  # the extremes ride along
        counters[0, slot], keys[0, slot] = counter, key
    store = DataStore(envs, agents)
    store.push("words", np.zeros((envs, agents, 4), np.uint32))
    store.push("counters", counters)
    store.push("keys", keys)
    launcher_for(store, backend).launch("philox_words")

    want = np.stack([philox4x32_10(counters[e, a], keys[e, a]) for e in range(envs)
                     for a in range(agents)]).reshape(envs, agents, 4)
    np.testing.assert_array_equal(store.pull("words"), want)
    for slot, (_, _, answer) in enumerate(KNOWN_ANSWERS):
        assert tuple(store.pull("words")[0, slot]) == answer


def test_each_thread_draws_the_uniform_numpy_says(backend):
    envs, agents, seed = 3, 5, 2**40 + 17
    draws = np.arange(envs * agents, dtype=np.uint32).reshape(envs, agents) * 1000
    store = DataStore(envs, agents)
    store.push("u", np.zeros((envs, agents), np.float32))
    store.push("draws", draws)
    store.push("key", np.array(key_from_seed(seed), np.uint32), per="shared")
    launcher_for(store, backend).launch("thread_uniform")
    np.testing.assert_array_equal(store.pull("u"), thread_uniforms(seed, draws)[..., 0])


def test_uniforms_lie_in_zero_one_exactly():
    u = uniform_from_bits(np.array([0, 255, 256, 2**32 - 1], np.uint32))
    assert u.dtype == np.float32
    assert u[0] == 0 and u[1] == 0 and u[2] == 2.0**-24
    assert u[3] == np.float32(1 - 2.0**-24) and u[3] < 1


def test_streams_of_threads_draws_and_heads_differ():
    u = thread_uniforms(9, np.zeros((4, 5), np.uint32), num_streams=3)
    later = thread_uniforms(9, np.ones((4, 5), np.uint32), num_streams=3)
    assert len(np.unique(np.concatenate([u.ravel(), later.ravel()]))) == 2 * u.size


def test_seed_is_split_into_the_two_key_words():
    assert key_from_seed(0) == (0, 0)
    assert key_from_seed(2**32 + 5) == (5, 1)
    assert key_from_seed(MAX_SEED) == (2**32 - 1, 2**32 - 1)


@pytest.mark.parametrize("seed, message", [
    (-1, r"\[0, 2\*\*64\)"),
    (2**64, r"\[0, 2\*\*64\)"),
    (1.5, "whole number"),
    (True, "whole number"),
    ("7", "whole number"),
])
def test_bad_seeds_are_refused(seed, message):
    with pytest.raises(SamplerError, match=message):
        key_from_seed(seed)


@pytest.mark.skipif(nvcc_path() is None, reason="nvcc is not on this machine")
def test_cuda_c_test_kernels_compile_where_pycuda_cannot_run():
    assert ".entry philox_words" in cuda_c.ptx(PHILOX_CUDA_C)
