"""The fast floor: what exists for speed alone, behind one switch (wd_teach.floors).

Nothing here is imported while the fast floor is off (WD_TEACH_FAST=0). Each piece names the
plain function it replaces and what it gained (bench/NOTES.md).

    policy.py           the policies' twins: the padded input layer, Linear-ReLU pairs as one
                        fused product, stacked output layers, weights cast once a rollout
    learners.py         A2C's and PPO's learners with their losses compiled (trainer.compile)
                        and their observations padded once
    triton_kernels.py   the ReLU's backward and the gradient's masked product, in Triton
    direct_launch.py    Numba kernels launched by cuLaunchKernel through ctypes, arguments
                        packed once (replaces Numba's own `kernel[grid, block, stream](*args)`)

An env's kernels are CUDA C and Numba beside its env.py, so their twins live there too,
named by the env (Env.fast_kernels) and launched by the wrapper in the plain kernel's place
behind the same switch:

    envs/tag_continuous/observe_fast.cu (+ observe_fast_numba.py, launched as
    envs/_tag/fast.py says, on envs/_tag/fast.cuh and fast_numba.py)
                        the observe's rows staged in shared memory, each warp's written as
                        one run (replaces step.cu's tag_continuous_observe, lesson 06's):
                        at 2,000 x 1,000 on an H200 the observe 3.47 -> 0.78 ms
    envs/tag_grid/observe_fast.cu (+ observe_fast_numba.py)
                        the same for the grid game (replaces its tag_grid_observe); tested
                        equal on Numba's simulator, not yet measured on a GPU
"""
