"""Every shipped env's Numba kernels compile for a real GPU, not only run on the simulator,
and Tag's compile without a fused multiply-add or a double-precision step: what lets its
backends agree bit for bit (envs/_tag/tag.cuh says why). NVVM needs no GPU to write PTX,
so this runs in CI, in a fresh process with the simulator off, for the argument types the
wrapper passes."""

from ptx_harness import compile_in_fresh_process

SCRIPT = """
    import inspect

    import numpy as np
    from numba.np import numpy_support

    from wd_teach.env.registry import find_env, shipped_envs

    def signature(kernel, env):
        state = env.full_state(2)
        scalars = {"num_agents": env.num_agents, "episode_length": env.episode_length,
                   **env.constants()}
        args = []
        for name in inspect.signature(kernel.py_func).parameters:
            if name in state:
                data = state[name].data
                args.append(types.Array(numpy_support.from_dtype(data.dtype), data.ndim, "C"))
            else:
                whole = isinstance(scalars[name], (int, np.integer))
                args.append(types.int32 if whole else types.float32)
        return tuple(args)

    envs = [find_env(name).env_class() for name in shipped_envs()]
    # the Tag games' grid search too, which only search="grid" launches
    envs += [type(env)(search="grid") for env in envs if hasattr(env.config, "search")]
    for env in envs:
        module = env.numba_kernels()
        for name in env.step_kernels:
            kernel = getattr(module, name)
            ptx, _ = cuda.compile_ptx(kernel.py_func, signature(kernel, env), cc=(8, 0))
            if name.startswith("tag"):
                assert "fma.rn.f32" not in ptx, f"{name} fuses a multiply-add"
                assert ".f64" not in ptx, f"{name} computes in float64"
    print("compiled")
"""


def test_env_kernels_compile_to_ptx_for_a_gpu():
    compile_in_fresh_process(SCRIPT)
