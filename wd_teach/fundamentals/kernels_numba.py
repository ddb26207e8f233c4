"""The kernels of lesson 10 in Numba: the twins of kernels.cu, line for line.

The arrays are flat, as in C, so an index reads the same in both languages: the lesson is
about which addresses the neighbouring threads of a warp touch.
"""

import math

import numpy as np
from numba import cuda, float32

TILE = 32  # a tile of a transpose: one warp wide
#: A padded tile's row: one spare float. Numba needs a shared array's shape as constants,
#: and `TILE + 1` written in the kernel is an expression it will not fold: name it here.
TILE_PADDED = TILE + 1
SOFTMAX_ACTIONS = 32  # a row of logits, held whole in a local array (registers)
GRAVITY = np.float32(9.8)
POLE_HALF_LENGTH = np.float32(0.5)


# 1 · Coalescing: one thread adds up one row (see kernels.cu).
@cuda.jit
def sum_rows(probs, sums, num_rows, num_actions):
    row = cuda.blockIdx.x * cuda.blockDim.x + cuda.threadIdx.x
    if row >= num_rows:
        return
    total = float32(0.0)
    for action in range(num_actions):
        total += probs[row * num_actions + action]  # strided: lanes num_actions floats apart
    sums[row] = total


@cuda.jit
def sum_columns(probs_t, sums, num_rows, num_actions):
    row = cuda.blockIdx.x * cuda.blockDim.x + cuda.threadIdx.x
    if row >= num_rows:
        return
    total = float32(0.0)
    for action in range(num_actions):
        total += probs_t[action * num_rows + row]  # coalesced: lanes on consecutive floats
    sums[row] = total


# 2 · Shared memory: a transpose, naive, through a tile, through a padded tile.
@cuda.jit
def transpose_naive(src, dst, rows, cols):
    col = cuda.blockIdx.x * TILE + cuda.threadIdx.x
    row = cuda.blockIdx.y * TILE + cuda.threadIdx.y
    if row < rows and col < cols:
        dst[col * rows + row] = src[row * cols + col]


@cuda.jit
def transpose_tiled(src, dst, rows, cols):
    tile = cuda.shared.array((TILE, TILE), float32)  # a column of it lies in one bank
    col = cuda.blockIdx.x * TILE + cuda.threadIdx.x
    row = cuda.blockIdx.y * TILE + cuda.threadIdx.y
    if row < rows and col < cols:
        tile[cuda.threadIdx.y, cuda.threadIdx.x] = src[row * cols + col]
    cuda.syncthreads()
    col = cuda.blockIdx.y * TILE + cuda.threadIdx.x
    row = cuda.blockIdx.x * TILE + cuda.threadIdx.y
    if row < cols and col < rows:
        dst[row * rows + col] = tile[cuda.threadIdx.x, cuda.threadIdx.y]


@cuda.jit
def transpose_padded(src, dst, rows, cols):
    tile = cuda.shared.array((TILE, TILE_PADDED), float32)  # a column spans 32 banks
    col = cuda.blockIdx.x * TILE + cuda.threadIdx.x
    row = cuda.blockIdx.y * TILE + cuda.threadIdx.y
    if row < rows and col < cols:
        tile[cuda.threadIdx.y, cuda.threadIdx.x] = src[row * cols + col]
    cuda.syncthreads()
    col = cuda.blockIdx.y * TILE + cuda.threadIdx.x
    row = cuda.blockIdx.x * TILE + cuda.threadIdx.y
    if row < cols and col < rows:
        dst[row * rows + col] = tile[cuda.threadIdx.x, cuda.threadIdx.y]


# 3 · Occupancy: one thread per row of 32 logits, a heavy kernel (see kernels.cu).
@cuda.jit
def softmax_rows(logits, probs, num_rows):
    row = cuda.blockIdx.x * cuda.blockDim.x + cuda.threadIdx.x
    if row >= num_rows:
        return
    v = cuda.local.array(SOFTMAX_ACTIONS, float32)
    top = float32(-math.inf)
    for a in range(SOFTMAX_ACTIONS):
        v[a] = logits[row * SOFTMAX_ACTIONS + a]
        top = max(top, v[a])
    total = float32(0.0)
    for a in range(SOFTMAX_ACTIONS):
        v[a] = math.exp(v[a] - top)  # the largest becomes exp(0) = 1: nothing overflows
        total += v[a]
    for a in range(SOFTMAX_ACTIONS):
        probs[row * SOFTMAX_ACTIONS + a] = v[a] / total


# 4 · Packing: a cart-pole left to fall, one environment per block or many per block.
@cuda.jit(device=True)
def fall(state, env, dt):
    s = env * 4
    x_dot = state[s + 1]
    theta = state[s + 2]
    theta_dot = state[s + 3]
    state[s + 0] += dt * x_dot
    state[s + 2] += dt * theta_dot
    state[s + 3] += dt * GRAVITY * math.sin(theta) / POLE_HALF_LENGTH


@cuda.jit
def push_cart_per_block(state, dt, num_envs):
    env = cuda.blockIdx.x  # launched with blocks of one thread: 31 lanes of 32 idle
    if env >= num_envs:
        return
    fall(state, env, dt)


@cuda.jit
def push_carts(state, dt, num_envs):
    stride = cuda.gridDim.x * cuda.blockDim.x  # every thread of the grid, once round
    env = cuda.blockIdx.x * cuda.blockDim.x + cuda.threadIdx.x
    while env < num_envs:
        fall(state, env, dt)
        env += stride
