"""Code shown by name: cuda_function cuts one CUDA C function out of a source by parsing its
braces, python_function gives one Python function's source; both name what is there when the
name is not."""

import inspect
import textwrap

import pytest

from wd_teach.errors import ShowError, WdTeachError
from wd_teach.lessons.show import cuda_function, python_function, python_lines
from wd_teach.rng import kernels_numba as rng_numba
from wd_teach.rng import reference as rng
from wd_teach.sampler import sampler
from wd_teach.train.algorithms import a2c, ppo
from wd_teach.train.rollout import Rollout

SOURCE = r"""#include "wd_teach.cuh"
#define OPEN_BRACE {  // a brace in a preprocessor line is not code

// Half of x.
// (Two comment lines: both belong to the function.)
__device__ __forceinline__ float half(float x) { return 0.5f * x; }

int not_shown(int x) { return x; }  // plain C: neither __global__ nor __device__

/* A kernel whose body has braces
   in comments and in strings: } { */
extern "C" __global__ void braces(float* out, int n) {
  const int i = threadIdx.x;  // } a closing brace in a comment
  const char* text = "}}} {";  /* and in a block comment: { */
  const char quote = '}';
  if (i < n) {
    out[i] = half(out[i]);
  }
}

template <typename T>
__device__ void copy_one(T* to, const T* from) { *to = *from; }

extern "C" __global__ void last(int* x) { x[0] = 1; }
"""


def test_a_kernel_whose_body_has_braces_in_comments_and_strings_comes_whole():
    text = cuda_function(SOURCE, "braces")
    assert text.startswith("/* A kernel whose body has braces")
    assert text.endswith("out[i] = half(out[i]);\n  }\n}")
    assert "last" not in text


def test_a_device_helper_comes_with_its_comment_block_and_template_line():
    assert cuda_function(SOURCE, "half") == (
        "// Half of x.\n// (Two comment lines: both belong to the function.)\n"
        "__device__ __forceinline__ float half(float x) { return 0.5f * x; }")
    assert cuda_function(SOURCE, "copy_one").startswith("template <typename T>\n__device__")


def test_the_package_kernels_are_found_in_their_files():
    kernel = cuda_function(sampler.CUDA_C_PATH, "sample_actions")
    assert kernel.startswith('extern "C" __global__ void sample_actions(')
    assert kernel.endswith("rng_counter[slot] = draw + 1;  // the next launch draws new numbers\n}")
    assert "__device__ __forceinline__ uint4 wd_philox4x32_10(" in cuda_function(
        str(rng.CUDA_C_PATH), "wd_philox4x32_10")
    # A list of sources is searched in order, like env.cuda_sources().
    assert cuda_function([SOURCE, sampler.CUDA_C_PATH], "draw_from_cdf").startswith(
        "// The inverse-CDF draw")


def test_a_cuda_name_not_there_is_an_error_that_lists_the_names_there():
    with pytest.raises(ShowError) as caught:
        cuda_function(SOURCE, "brace")
    message = str(caught.value)
    assert "'brace'" in message
    assert "half, braces, copy_one, last" in message  # plain C and prototypes are not listed
    assert isinstance(caught.value, WdTeachError)
    with pytest.raises(ShowError, match="kernels.cu.*draw_from_cdf, most_probable"):
        cuda_function(sampler.CUDA_C_PATH, "no_such_kernel")


def test_a_cuda_file_that_is_not_there_is_an_error():
    with pytest.raises(ShowError, match="no CUDA C file"):
        cuda_function("no/such/file.cu", "kernel")
    with pytest.raises(ShowError, match="text or a .cu/.cuh path"):
        cuda_function(42, "kernel")


def test_python_function_is_the_dedented_source_of_a_function_or_method():
    assert python_function(Rollout._steps) == textwrap.dedent(
        inspect.getsource(Rollout._steps)).rstrip("\n")
    assert python_function(Rollout._steps).startswith("def _steps(self)")
    # A Numba function gives the Python it compiles, with or without .py_func.
    shown = python_function(rng_numba.philox4x32_10.py_func)
    assert "def philox4x32_10(c0, c1, c2, c3, k0, k1):" in shown
    assert python_function(rng_numba.philox4x32_10) == shown
    assert python_function(rng_numba, "philox4x32_10") == shown


def test_a_python_name_not_there_is_an_error_that_lists_the_names_there():
    with pytest.raises(ShowError, match=r"no 'steps'.*collect, _collect, _steps"):
        python_function(Rollout, "steps")
    with pytest.raises(ShowError, match=r"is a class, not a function.*_steps"):
        python_function(Rollout)
    with pytest.raises(ShowError, match=r"is a module.*mulhilo, philox4x32_10"):
        python_function(rng_numba)
    with pytest.raises(ShowError, match="no Python source"):
        python_function(len)


def test_python_lines_are_the_lines_that_begin_so_in_the_order_asked():
    assert python_lines(a2c.loss, "value_loss =", "policy_loss =") == (
        "value_loss = 0.5 * (returns - value).pow(2).sum() / samples\n"
        "policy_loss = -(advantages * log_prob).sum() / samples")
    shown = python_lines(ppo.loss, "ratio =", "clipped_ratio =")
    assert shown.splitlines()[0] == "ratio = (log_prob - old_log_prob).exp()"
    assert all(line in python_function(ppo.loss) for line in shown.splitlines())


def test_a_line_not_there_is_an_error_that_shows_the_lines_there():
    with pytest.raises(ShowError, match=r"(?s)no line of loss begins with 'policy_los ='.*"
                                        r"policy_loss = -\(advantages"):
        python_lines(a2c.loss, "policy_los =")
    with pytest.raises(ShowError, match="at least one start"):
        python_lines(a2c.loss)
