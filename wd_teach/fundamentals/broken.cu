// Three kernels with a bug each, for compute-sanitizer to find (lesson 10, Step 9). Twins of
// broken_numba.py. On a GPU nothing stops them: each runs, and its answer is wrong, or
// right by luck. Never launch them anywhere but under the sanitizer.

// memcheck: no guard, so the threads past the last item write past the end of `out`.
extern "C" __global__ void write_unguarded(float* out, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  out[i] = 1.0f;  // missing: if (i >= n) return;
}

// racecheck: every thread adds one to a shared counter by read-add-write; the threads race,
// and most of the additions are lost.
extern "C" __global__ void count_lost(int* count) {
  __shared__ int seen[1];
  if (threadIdx.x == 0) seen[0] = 0;
  __syncthreads();
  seen[0] = seen[0] + 1;  // a race: atomicAdd(&seen[0], 1) is the fix
  __syncthreads();
  if (threadIdx.x == 0) count[0] = seen[0];
}

// synccheck: a barrier inside the guard, which the spare threads past the last agent never
// reach (lesson 05's spacing bug); the warp that holds the last agent is split by it.
extern "C" __global__ void barrier_divergent(float* out, int num_agents) {
  if (threadIdx.x < num_agents) {
    __syncthreads();  // the spare threads never arrive
  }
  out[threadIdx.x] = 1.0f;
}
