"""Three kernels with a bug each, for compute-sanitizer to find: the twins of broken.cu.

Numba on a GPU does not check an index either, so these behave as the CUDA C does.
"""

import numpy as np
from numba import cuda, int32


@cuda.jit
def write_unguarded(out, n):
    i = cuda.blockIdx.x * cuda.blockDim.x + cuda.threadIdx.x
    out[i] = np.float32(1.0)  # missing: if i >= n: return


@cuda.jit
def count_lost(count):
    seen = cuda.shared.array(1, int32)
    if cuda.threadIdx.x == 0:
        seen[0] = 0
    cuda.syncthreads()
    seen[0] = seen[0] + 1  # a race: cuda.atomic.add(seen, 0, 1) is the fix
    cuda.syncthreads()
    if cuda.threadIdx.x == 0:
        count[0] = seen[0]


@cuda.jit
def barrier_divergent(out, num_agents):
    if cuda.threadIdx.x < num_agents:
        cuda.syncthreads()  # the spare threads never arrive
    out[cuda.threadIdx.x] = np.float32(1.0)
