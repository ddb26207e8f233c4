"""The fast floor (wd_teach.floors): what exists for speed alone, off with WD_TEACH_FAST=0.

direct_launch.py  Numba kernels launched by cuLaunchKernel through ctypes, arguments packed
                  once (replaces Numba's own `kernel[grid, block, stream](*args)`)
"""
