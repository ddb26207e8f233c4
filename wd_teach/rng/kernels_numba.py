"""Philox4x32-10 for Numba kernels: the twin of wd_teach/rng/kernels.cuh, line for line.

CUDA C's `unsigned int` wraps at 2**32 by itself. Numba and the simulator need help to get
the same bits: on the GPU a Python int becomes int64 and mixing it with unsigned numbers can
turn arithmetic into floating point; on the simulator the numbers are NumPy scalars and
Python ints. So every word here is a uint64 (cast once, on the way in), every constant is a
uint64 too, and each sum is masked back to 32 bits. A product of two 32-bit words fits in 64
bits, so nothing ever overflows and all three (GPU, simulator, NumPy in wd_teach/rng/reference.py)
agree bit for bit.
"""

import numpy as np
from numba import cuda

from wd_teach.rng import reference as rng

PHILOX_M0 = np.uint64(rng.PHILOX_M0)
PHILOX_M1 = np.uint64(rng.PHILOX_M1)
PHILOX_W0 = np.uint64(rng.PHILOX_W0)
PHILOX_W1 = np.uint64(rng.PHILOX_W1)
PHILOX_ROUNDS = rng.PHILOX_ROUNDS
MASK_32 = np.uint64(rng.MASK_32)
SHIFT_32 = np.uint64(32)
UNIFORM_SHIFT = np.uint64(rng.UNIFORM_SHIFT)
UNIFORM_SCALE = np.float32(rng.UNIFORM_SCALE)


@cuda.jit(device=True)
def mulhilo(a, b):
    """The high and low 32 bits of the 64-bit product a * b."""
    product = a * b
    return product >> SHIFT_32, product & MASK_32


@cuda.jit(device=True)
def philox4x32_10(c0, c1, c2, c3, k0, k1):
    """Ten rounds of Philox on the counter (c0, c1, c2, c3) under the key (k0, k1)."""
    for round_ in range(PHILOX_ROUNDS):
        if round_ > 0:
            k0 = (k0 + PHILOX_W0) & MASK_32  # masked: the wrap at 2^32 of unsigned int
            k1 = (k1 + PHILOX_W1) & MASK_32
        hi0, lo0 = mulhilo(PHILOX_M0, c0)
        hi1, lo1 = mulhilo(PHILOX_M1, c2)
        c0, c1, c2, c3 = hi1 ^ c1 ^ k0, lo1, hi0 ^ c3 ^ k1, lo0
    return c0, c1, c2, c3


@cuda.jit(device=True)
def uniform_from_bits(bits):
    """A float32 in [0, 1) from a 32-bit word."""
    return np.float32(bits >> UNIFORM_SHIFT) * UNIFORM_SCALE


@cuda.jit(device=True)
def uniform(agent, env, draw, stream, key):
    """The uniform number thread (env, agent) gets for its `draw`-th draw of stream `stream`;
    `key` holds the seed's two words."""
    bits = philox4x32_10(np.uint64(agent), np.uint64(env), np.uint64(draw), np.uint64(stream),
                         np.uint64(key[0]), np.uint64(key[1]))
    return uniform_from_bits(bits[0])
