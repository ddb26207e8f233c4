"""Philox4x32-10: the random numbers of wd_teach's kernels, and their NumPy reference.

Why a counter-based generator. A classic generator (a Mersenne twister, curand's XORWOW)
carries a state that each draw updates: one state per thread, tens of bytes each, read and
written on every draw, and streams that are hard to line up between backends. A
counter-based generator is a pure function instead: `bits = philox(counter, key)`. Give each
thread its own counter (here: which agent, which environment, how many draws it has made,
which stream) and the seed as the key, and every thread gets independent numbers from one
4-byte state (its draw count). The same function written in CUDA C, in Numba and in NumPy
gives the same bits everywhere, so PyCUDA, Numba on a GPU, Numba on the simulator and this
reference all draw the same actions from the same seed.

Why Philox4x32-10 (Salmon et al., "Parallel random numbers: as easy as 1, 2, 3", SC 2011).
It passes the BigCrush statistical tests, it is what curand and PyTorch's CUDA generator use,
it needs only 32-bit multiplies, XORs and additions (cheap on a GPU, easy to write the same
in three languages), and it comes with published known-answer vectors that pin down every
bit: tests/test_rng.py checks them.

The counter of a sampler draw, four 32-bit words:  (agent, env, draw, stream)
  agent, env  which thread, so no two threads share numbers;
  draw        the thread's own draw count, kept in the store (rng_counter, per agent);
  stream      which action head, so the heads of one draw are independent.
The key is the seed: its low and high 32 bits.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from wd_teach.errors import SamplerError

#: The CUDA C twin of this module, included by the kernels that draw (Numba: rng_numba.py).
CUDA_C_PATH = Path(__file__).parent / "kernels.cuh"
#: Philox's two multipliers and the two constants its key grows by between rounds
#: (the golden ratio and sqrt(3) - 1, as 32-bit fractions).
PHILOX_M0 = 0xD2511F53
PHILOX_M1 = 0xCD9E8D57
PHILOX_W0 = 0x9E3779B9
PHILOX_W1 = 0xBB67AE85
PHILOX_ROUNDS = 10
MASK_32 = 0xFFFFFFFF
#: A uniform float keeps the top 24 bits of a 32-bit word: a float32 holds them exactly, so
#: the number is the same on every backend and lies in [0, 1), never 1.
UNIFORM_SHIFT = 8
UNIFORM_SCALE = np.float32(2.0**-24)
MAX_SEED = 2**64 - 1


def key_from_seed(seed: int) -> tuple[int, int]:
    """Philox's key (two 32-bit words) from a seed, a whole number in [0, 2**64)."""
    if isinstance(seed, (bool, np.bool_)) or not isinstance(seed, (int, np.integer)):
        raise SamplerError(f"a seed must be a whole number, got {seed!r}.")
    if not 0 <= seed <= MAX_SEED:
        raise SamplerError(f"a seed must lie in [0, 2**64), got {seed}. Take it modulo 2**64.")
    seed = int(seed)
    return seed & MASK_32, seed >> 32


def philox4x32_10(counter, key) -> np.ndarray:
    """Philox4x32-10 of many counters at once: `counter` is four arrays (or numbers) of 32-bit
    words that broadcast together, `key` two words. Returns uint32, shape (4, *broadcast).

    Every word is held in uint64 and masked back to 32 bits, so no step can overflow: the
    product of two 32-bit words fits in 64 bits.
    """
    c0, c1, c2, c3 = np.broadcast_arrays(*(np.asarray(c, dtype=np.uint64) for c in counter))
    k0, k1 = np.uint64(key[0]), np.uint64(key[1])
    mask, shift = np.uint64(MASK_32), np.uint64(32)
    for round_ in range(PHILOX_ROUNDS):
        if round_ > 0:
            k0 = (k0 + np.uint64(PHILOX_W0)) & mask
            k1 = (k1 + np.uint64(PHILOX_W1)) & mask
        product0 = np.uint64(PHILOX_M0) * c0
        product1 = np.uint64(PHILOX_M1) * c2
        c0, c1, c2, c3 = ((product1 >> shift) ^ c1 ^ k0, product1 & mask,
                          (product0 >> shift) ^ c3 ^ k1, product0 & mask)
    return np.stack([c0, c1, c2, c3]).astype(np.uint32)


def uniform_from_bits(bits) -> np.ndarray:
    """Floats in [0, 1) from 32-bit words: (bits >> 8) * 2**-24, exact in float32."""
    return (np.asarray(bits, dtype=np.uint32) >> UNIFORM_SHIFT).astype(np.float32) * UNIFORM_SCALE


def thread_uniforms(seed: int, draws: np.ndarray, num_streams: int = 1) -> np.ndarray:
    """The uniform number each sampler thread draws: shape [envs, agents, streams].

    `draws[env, agent]` is that thread's draw count (the store's rng_counter before the
    launch); stream `s` is action head `s`.
    """
    draws = np.asarray(draws, dtype=np.uint32)
    if draws.ndim != 2:
        raise SamplerError(f"draws must be shaped [envs, agents], got {draws.shape}.")
    env, agent = np.indices(draws.shape, dtype=np.uint32)
    stream = np.arange(num_streams, dtype=np.uint32)
    bits = philox4x32_10((agent[..., None], env[..., None], draws[..., None], stream),
                         key_from_seed(seed))
    return uniform_from_bits(bits[0])
