"""Every shipped env's Numba kernels compile for a real GPU, not only run on the simulator,
and Tag's compile without a fused multiply-add or a double-precision step: what lets its
backends agree bit for bit (envs/_tag/tag.cuh says why). NVVM needs no GPU to write PTX,
so this runs in CI, in a fresh process with the simulator off, for the argument types the
wrapper passes."""

from pathlib import Path

from ptx_harness import compile_in_fresh_process

SCRIPT = """
    import importlib.util
    import sys

    from wd_teach.env.registry import find_env, shipped_envs

    # bench/sass.py's numba_signature: the types the wrapper passes, worked out in one place
    spec = importlib.util.spec_from_file_location("bench_sass", {sass!r})
    sass = importlib.util.module_from_spec(spec)
    sys.modules["bench_sass"] = sass
    spec.loader.exec_module(sass)
    signature = sass.numba_signature

    envs = [find_env(name).env_class() for name in shipped_envs()]
    # the Tag games' grid search too, which only search="grid" launches
    envs += [type(env)(search="grid") for env in envs if hasattr(env.config, "search")]
    for env in envs:
        module = env.numba_kernels()
        for name in env.step_kernels:
            kernel = getattr(module, name)
            ptx, _ = cuda.compile_ptx(kernel.py_func, signature(kernel.py_func, env), cc=(8, 0))
            if name.startswith("tag"):
                assert "fma.rn.f32" not in ptx, f"{name} fuses a multiply-add"
                assert ".f64" not in ptx, f"{name} computes in float64"
    print("compiled")
"""


def test_env_kernels_compile_to_ptx_for_a_gpu():
    sass = str(Path(__file__).resolve().parents[1] / "bench" / "sass.py")
    compile_in_fresh_process(SCRIPT.replace("{sass!r}", repr(sass)))
