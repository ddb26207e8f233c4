"""The reset's Numba kernels: the twins of wd_teach/reset/kernels.cu, line for line.

Numba compiles a kernel for each dtype it meets, so one kernel would serve every array; the
four names are kept to match the CUDA C, where an `extern "C"` kernel has one C type. Each
array is read through a flat view, [envs * row_length], as the C pointer sees it.
"""

from numba import cuda

from wd_teach.numba_index import agent_id, env_id


@cuda.jit(device=True)
def restore_row_if_done(data, pristine, done, row_length):
    """Copy this environment's row back from the pristine copy, if its episode is done. The
    threads of the environment's blocks stride over the row together."""
    env = env_id()
    if done[env] == 0:
        return
    flat_data = data.reshape(data.size)
    flat_pristine = pristine.reshape(pristine.size)
    row_start = env * row_length
    stride = cuda.gridDim.y * cuda.blockDim.x  # threads per environment
    for i in range(agent_id(), row_length, stride):
        flat_data[row_start + i] = flat_pristine[row_start + i]


@cuda.jit
def reset_float(data, pristine, done, row_length):
    restore_row_if_done(data, pristine, done, row_length)


@cuda.jit
def reset_int(data, pristine, done, row_length):
    restore_row_if_done(data, pristine, done, row_length)


@cuda.jit
def reset_uint(data, pristine, done, row_length):
    restore_row_if_done(data, pristine, done, row_length)


@cuda.jit
def reset_uchar(data, pristine, done, row_length):
    restore_row_if_done(data, pristine, done, row_length)


@cuda.jit
def clear_done(done):
    """The episode starts again: one thread per environment lowers its flag."""
    if agent_id() == 0:
        done[env_id()] = 0
