"""GPU fundamentals, measured on the course's own kernels (notebook 10).

    kernels.cu         the lesson's CUDA C kernels: coalesced and strided reads, a transpose
                       through shared memory (with and without bank conflicts), a grid-stride
                       loop that packs many environments into a block
    kernels_numba.py   their Numba twins, line for line
    reference.py       what they compute, in NumPy
    measure.py         launching them by hand; GB/s against a copy's; registers, occupancy
                       (and the shared memory per block that lowers it), bank conflicts
    broken.cu          three kernels with a bug each, for compute-sanitizer to find
    broken_numba.py    their Numba twins
    sanitizer.py       find compute-sanitizer and run a kernel under it
"""
