// The kernels of lesson 10 (GPU fundamentals), twins of kernels_numba.py line for line.
//
// Every array is flat here and in Numba alike, so an index reads the same in both languages:
// the point of the lesson is which addresses neighbouring threads touch.

#define TILE 32  // a tile of a transpose: one warp wide

// 1 · Coalescing. Each thread adds up one row of `num_actions` probabilities: the sampler's
// own read. Row-major, the 32 threads of a warp read addresses num_actions floats apart
// (strided); action-major (`probs_t[action * num_rows + row]`), they read 32 consecutive
// floats, one 128-byte line per load (coalesced).
extern "C" __global__ void sum_rows(const float* probs, float* sums, int num_rows,
                                    int num_actions) {
  const int row = blockIdx.x * blockDim.x + threadIdx.x;
  if (row >= num_rows) return;
  float total = 0.0f;
  for (int action = 0; action < num_actions; ++action) {
    total += probs[row * num_actions + action];  // strided: lanes num_actions floats apart
  }
  sums[row] = total;
}

extern "C" __global__ void sum_columns(const float* probs_t, float* sums, int num_rows,
                                       int num_actions) {
  const int row = blockIdx.x * blockDim.x + threadIdx.x;
  if (row >= num_rows) return;
  float total = 0.0f;
  for (int action = 0; action < num_actions; ++action) {
    total += probs_t[action * num_rows + row];  // coalesced: lanes on consecutive floats
  }
  sums[row] = total;
}

// 2 · Shared memory. A transpose reads rows and writes columns: one of the two is strided.
// A block of TILE x TILE threads stages a tile in shared memory so that both the read and
// the write of global memory are coalesced. Reading the tile down a column, the 32 lanes of
// a warp hit addresses TILE floats apart: with TILE = 32 all in the same bank (a 32-way
// conflict, served one by one); a row of TILE + 1 floats puts them in 32 different banks.
extern "C" __global__ void transpose_naive(const float* src, float* dst, int rows, int cols) {
  const int col = blockIdx.x * TILE + threadIdx.x;
  const int row = blockIdx.y * TILE + threadIdx.y;
  if (row < rows && col < cols) dst[col * rows + row] = src[row * cols + col];
}

extern "C" __global__ void transpose_tiled(const float* src, float* dst, int rows, int cols) {
  __shared__ float tile[TILE][TILE];  // a column of it lies in one bank
  int col = blockIdx.x * TILE + threadIdx.x;
  int row = blockIdx.y * TILE + threadIdx.y;
  if (row < rows && col < cols) tile[threadIdx.y][threadIdx.x] = src[row * cols + col];
  __syncthreads();
  col = blockIdx.y * TILE + threadIdx.x;  // the block's tile, written to its mirror place
  row = blockIdx.x * TILE + threadIdx.y;
  if (row < cols && col < rows) dst[row * rows + col] = tile[threadIdx.x][threadIdx.y];
}

extern "C" __global__ void transpose_padded(const float* src, float* dst, int rows, int cols) {
  __shared__ float tile[TILE][TILE + 1];  // one spare float a row: a column spans 32 banks
  int col = blockIdx.x * TILE + threadIdx.x;
  int row = blockIdx.y * TILE + threadIdx.y;
  if (row < rows && col < cols) tile[threadIdx.y][threadIdx.x] = src[row * cols + col];
  __syncthreads();
  col = blockIdx.y * TILE + threadIdx.x;
  row = blockIdx.x * TILE + threadIdx.y;
  if (row < cols && col < rows) dst[row * rows + col] = tile[threadIdx.x][threadIdx.y];
}

// 3 · Occupancy. Each thread turns one row of 32 logits into probabilities (a softmax, the
// policy's last step), the whole row held in a local array that ptxas keeps in registers: a
// heavy kernel. Unbounded, ptxas gives it as many registers as it likes, so fewer blocks fit
// on an SM; lesson 10's Exercise 4 bounds it with __launch_bounds__.
#define SOFTMAX_ACTIONS 32

extern "C" __global__ void softmax_rows(const float* logits, float* probs, int num_rows) {
  const int row = blockIdx.x * blockDim.x + threadIdx.x;
  if (row >= num_rows) return;
  float v[SOFTMAX_ACTIONS];
  float top = -INFINITY;
  for (int a = 0; a < SOFTMAX_ACTIONS; ++a) {
    v[a] = logits[row * SOFTMAX_ACTIONS + a];
    top = fmaxf(top, v[a]);
  }
  float total = 0.0f;
  for (int a = 0; a < SOFTMAX_ACTIONS; ++a) {
    v[a] = expf(v[a] - top);  // the largest becomes exp(0) = 1: nothing overflows
    total += v[a];
  }
  for (int a = 0; a < SOFTMAX_ACTIONS; ++a) probs[row * SOFTMAX_ACTIONS + a] = v[a] / total;
}

// 4 · Packing. One step of a cart-pole left to fall (CartPole's state: x, x_dot, theta,
// theta_dot), for one environment. CartPole runs one environment per block of one thread;
// push_carts packs many environments into each block and loops over the rest (grid stride).
#define GRAVITY 9.8f
#define POLE_HALF_LENGTH 0.5f

__device__ void fall(float* state, int env, float dt) {
  float* s = state + env * 4;
  const float x_dot = s[1];
  const float theta = s[2];
  const float theta_dot = s[3];
  s[0] += dt * x_dot;
  s[2] += dt * theta_dot;
  s[3] += dt * GRAVITY * sinf(theta) / POLE_HALF_LENGTH;
}

extern "C" __global__ void push_cart_per_block(float* state, float dt, int num_envs) {
  const int env = blockIdx.x;  // launched with blocks of one thread: 31 lanes of 32 idle
  if (env >= num_envs) return;
  fall(state, env, dt);
}

extern "C" __global__ void push_carts(float* state, float dt, int num_envs) {
  const int stride = gridDim.x * blockDim.x;  // every thread of the grid, once round
  for (int env = blockIdx.x * blockDim.x + threadIdx.x; env < num_envs; env += stride) {
    fall(state, env, dt);
  }
}
