"""Done environments restart, and a log of episodes stays on the device (notebook 04).

    reset.py         Resetter, the public class
    kernels.cu       the CUDA C kernels (PyCUDA)
    kernels_numba.py their Numba twins, line for line
    reference.py     the NumPy twin
    episode_log.py   EpisodeLog: what happened in an episode, recorded on the device
"""
