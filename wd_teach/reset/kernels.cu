// wd_teach/reset/kernels.cu: put finished environments back to their start, and only those.
//
// An environment whose done flag is set gets every array it resets copied back from the
// array's pristine copy (kept in the store since the push). Each array is seen as rows, one
// per environment: [envs, row_length], whatever its shape after the first dimension. One
// kernel per C type, all the same template; the launcher runs it once per array, then
// clear_done (a separate launch, so that no block can clear a flag that another block of
// the same environment has yet to read).
// The Numba twin, line for line, is wd_teach/reset/kernels_numba.py.
#include "wd_teach.cuh"

// Copy this environment's row back from the pristine copy, if its episode is done. The
// threads of the environment's blocks stride over the row together.
template <typename T>
__device__ void restore_row_if_done(T* data, const T* pristine, const int* done,
                                    int row_length) {
  const int env = wd_env_id();
  if (done[env] == 0) return;
  const long long row_start = (long long)env * row_length;
  const int stride = gridDim.y * blockDim.x;  // threads per environment
  for (int i = wd_agent_id(); i < row_length; i += stride) {
    data[row_start + i] = pristine[row_start + i];
  }
}

extern "C" __global__ void reset_float(float* data, const float* pristine, const int* done,
                                       int row_length) {
  restore_row_if_done(data, pristine, done, row_length);
}

extern "C" __global__ void reset_int(int* data, const int* pristine, const int* done,
                                     int row_length) {
  restore_row_if_done(data, pristine, done, row_length);
}

extern "C" __global__ void reset_uint(unsigned int* data, const unsigned int* pristine,
                                      const int* done, int row_length) {
  restore_row_if_done(data, pristine, done, row_length);
}

extern "C" __global__ void reset_uchar(unsigned char* data, const unsigned char* pristine,
                                       const int* done, int row_length) {
  restore_row_if_done(data, pristine, done, row_length);
}

// The episode starts again: one thread per environment lowers its flag.
extern "C" __global__ void clear_done(int* done) {
  if (wd_agent_id() == 0) done[wd_env_id()] = 0;
}
