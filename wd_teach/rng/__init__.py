"""Random numbers on the device: Philox4x32-10, one counter per thread (notebook 03).

    kernels.cuh      the CUDA C device functions, included by the sampler's kernels.cu
    kernels_numba.py their Numba twins, line for line
    reference.py     the NumPy twin, checked against Philox's published known answers
"""
