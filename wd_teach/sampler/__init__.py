"""The action sampler: every agent's action drawn on the device (notebook 03).

    sampler.py       Sampler, the public class: checks, then launches the kernels
    kernels.cu       the CUDA C kernels (PyCUDA)
    kernels_numba.py their Numba twins, line for line
    reference.py     the NumPy twin and the statistical checks
    bench.py         bench_sampler: draws per second, by backend
    pictures.py      the lesson's figures
"""
