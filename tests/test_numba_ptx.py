"""The Numba kernels of the sampler and the reset compile for a real GPU, not only run on the
simulator: type inference for the GPU is stricter (a uint32 mixed with a Python int can turn
into float64 there), so a kernel can pass every simulator test and still fail to compile.

Numba's compiler (NVVM) needs no GPU to write PTX, so this runs in CI: in a fresh process
with the simulator off, compiling each kernel for the argument types the launcher passes.
"""

from ptx_harness import compile_in_fresh_process

SCRIPT = """
    from wd_teach.reset import kernels_numba as reset_numba
    from wd_teach.sampler import kernels_numba as sampler_numba

    def compile(kernel, *args):
        ptx, _ = cuda.compile_ptx(kernel.py_func, args, cc=(8, 0))
        return ptx

    def compile_float32(kernel, *args):
        # the sampler's hot path: a float64 step there is a typing slip, and slow
        ptx = compile(kernel, *args)
        assert ".f64" not in ptx, f"{kernel.py_func.__name__} computes in float64"

    probs = types.Array(types.float32, 3, "C")
    counter, key = types.Array(types.uint32, 2, "C"), types.Array(types.uint32, 1, "C")
    offsets, done = types.Array(types.int32, 1, "C"), types.Array(types.int32, 1, "C")
    for ndim in (2, 3):
        actions = types.Array(types.int32, ndim, "C")
        compile_float32(sampler_numba.sample_actions, probs, actions, counter, key, offsets,
                        types.int32, types.int32)
        compile_float32(sampler_numba.argmax_actions, probs, actions, offsets, types.int32,
                        types.int32)
    for name, dtype in (("reset_float", types.float32), ("reset_int", types.int32),
                        ("reset_uint", types.uint32), ("reset_uchar", types.uint8)):
        for ndim in (1, 3):
            array = types.Array(dtype, ndim, "C")
            compile(getattr(reset_numba, name), array, array, done, types.int32)
    compile(reset_numba.clear_done, done)
    print("compiled")
"""


def test_numba_kernels_compile_to_ptx_for_a_gpu():
    compile_in_fresh_process(SCRIPT)


FUNDAMENTALS = """
    from wd_teach.fundamentals import broken_numba, kernels_numba as k

    def compile(kernel, *args, float32=True):
        ptx, _ = cuda.compile_ptx(kernel.py_func, args, cc=(8, 0))
        assert not float32 or ".f64" not in ptx, f"{kernel.py_func.__name__} uses float64"
        return ptx

    floats, ints = types.Array(types.float32, 1, "C"), types.Array(types.int32, 1, "C")
    i32, f32 = types.int32, types.float32
    for kernel in (k.sum_rows, k.sum_columns, k.transpose_naive, k.transpose_tiled,
                   k.transpose_padded):
        compile(kernel, floats, floats, i32, i32)
    for kernel in (k.push_cart_per_block, k.push_carts):
        # sinf's range reduction for huge angles has one float64 product, in CUDA C too
        compile(kernel, floats, f32, i32, float32=False)
    compile(k.softmax_rows, floats, floats, i32)
    compile(broken_numba.write_unguarded, floats, i32)
    compile(broken_numba.count_lost, ints)
    compile(broken_numba.barrier_divergent, floats, i32)
    print("compiled")
"""


def test_lesson_10_kernels_compile_to_ptx_for_a_gpu():
    """Lesson 10's kernels (and its broken ones) compile for a GPU: a shared array's shape
    written as `TILE + 1` passes the simulator but not the GPU's compiler."""
    compile_in_fresh_process(FUNDAMENTALS)


BOUNDED = """
    from wd_teach.fundamentals import kernels_numba, measure

    args = (types.Array(types.float32, 1, "C"), types.Array(types.float32, 1, "C"), types.int32)
    ptx, _ = cuda.compile_ptx(kernels_numba.softmax_rows.py_func, args, cc=(9, 0),
                              launch_bounds=(256, 8))
    found = measure.ptx_registers_and_bounds(ptx, "softmax_rows")  # a mangled entry name
    assert (found["maxntid"], found["min_blocks"]) == (256, 8), found
    usage = measure.ptxas_usage(ptx, "softmax_rows")
    assert usage is None or usage["registers"] <= 32, usage
    free, _ = cuda.compile_ptx(kernels_numba.softmax_rows.py_func, args, cc=(9, 0))
    assert measure.ptx_registers_and_bounds(free, "softmax_rows")["maxntid"] is None
    print("compiled")
"""


def test_numbas_launch_bounds_are_read_from_its_ptx():
    """Lesson 10's Exercise 4 reads Numba's bounds from the PTX it compiled, whose kernel's
    name is mangled and whose last line is the kernel's closing brace."""
    compile_in_fresh_process(BOUNDED)
