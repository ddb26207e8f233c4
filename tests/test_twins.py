"""Twins agree on their parameters: every layer and env folder, CUDA C beside Numba beside NumPy.

A kernel is bound by its parameter names (wd_teach.launch), so a twin that renames or
reorders one is a twin that launches with the wrong arrays. This test walks every folder that
holds kernels, reads the CUDA C with wd_teach.cuda_c.kernel_signatures and the Numba kernels
with inspect.signature, and asks for the same kernels with the same parameters in the same
order; for an env folder also that the NumPy `step(...)` in reference.py takes the same names.
"""

import inspect
import re
from pathlib import Path

import pytest

import wd_teach
import wd_teach_envs
from wd_teach import cuda_c
from wd_teach.backends.numba import is_numba_kernel as _is_numba_kernel
from wd_teach.env.registry import find_env, shipped_envs
from wd_teach.fundamentals import broken_numba as fundamentals_broken_numba
from wd_teach.fundamentals import kernels_numba as fundamentals_numba
from wd_teach.reset import kernels_numba as reset_numba
from wd_teach.rng import kernels_numba as rng_numba
from wd_teach.sampler import kernels_numba as sampler_numba
from wd_teach_envs._tag import nearest_numba, tag_numba

PACKAGE = Path(wd_teach.__file__).parent
TAG = Path(wd_teach_envs.__file__).parent / "_tag"

#: Sizes a kernel is told but a NumPy step reads off its arrays' shapes; the wrapper binds the
#: reference by its parameter names (_bind_reference), so it simply does not ask for them.
SHAPE_SIZES = {"num_envs", "num_agents", "obs_size"}

#: Layer folders and the shared Tag kernel: CUDA C file, Numba module.
LAYERS = {
    "sampler": (PACKAGE / "sampler" / "kernels.cu", sampler_numba),
    "reset": (PACKAGE / "reset" / "kernels.cu", reset_numba),
    "_tag": (TAG / "tag.cu", tag_numba),
    "fundamentals": (PACKAGE / "fundamentals" / "kernels.cu", fundamentals_numba),
    "fundamentals (broken)": (PACKAGE / "fundamentals" / "broken.cu", fundamentals_broken_numba),
}

_DEVICE = re.compile(r"__device__\s+(?:__forceinline__\s+)?([\w ]+?)\s+(\w+)\s*\(([^)]*)\)")


def cuda_kernels(source) -> dict[str, list[str]]:
    """Each `extern "C" __global__` kernel of `source`, with its parameter names in order."""
    return {name: [p.name for p in params]
            for name, params in cuda_c.kernel_signatures(cuda_c.read_source(source)).items()}


def numba_kernels(module, device: bool = False) -> dict[str, list[str]]:
    """Each @cuda.jit function defined in `module` (its kernels as the launcher finds them, or
    its device functions), with its parameter names."""
    return {name: list(inspect.signature(f.py_func).parameters)
            for name, f in vars(module).items()
            if hasattr(f, "py_func") and _is_numba_kernel(f) != device
            and f.py_func.__module__ == module.__name__}


def cuda_device_functions(source: str) -> dict[str, list[str]]:
    """Each `__device__` function of a header: the parameters a Numba twin takes. A void
    function's writable pointers are its results, which a Numba function returns instead."""
    found = {}
    for returns, name, text in _DEVICE.findall(source):
        params = [p.strip() for p in text.split(",") if p.strip()]
        out = returns.strip() == "void"
        found[name] = [re.findall(r"\w+", p)[-1] for p in params
                       if not (out and "*" in p and not p.startswith("const"))]
    return found


def mismatches(cuda: dict[str, list[str]], numba: dict[str, list[str]]) -> list[str]:
    """What differs between two twins' kernels: a missing kernel, or other parameters."""
    problems = [f"{name}: only in CUDA C" for name in cuda if name not in numba]
    problems += [f"{name}: only in Numba" for name in numba if name not in cuda]
    problems += [f"{name}: CUDA C takes {cuda[name]}, Numba {numba[name]}"
                 for name in cuda if name in numba and cuda[name] != numba[name]]
    return problems


@pytest.mark.parametrize("layer", LAYERS)
def test_a_layer_folders_cuda_c_and_numba_kernels_take_the_same_parameters(layer):
    source, module = LAYERS[layer]
    cuda = cuda_kernels(source)
    assert cuda, f"no kernels found in {source}"
    assert mismatches(cuda, numba_kernels(module)) == []


def test_rng_header_and_its_numba_twin_have_the_same_functions():
    header = (PACKAGE / "rng" / "kernels.cuh").read_text()
    cuda = {name.removeprefix("wd_"): params
            for name, params in cuda_device_functions(header).items()}
    assert set(cuda) == {"mulhilo", "philox4x32_10", "uniform_from_bits", "uniform"}
    assert mismatches(cuda, numba_kernels(rng_numba, device=True)) == []


@pytest.mark.parametrize("name", sorted(shipped_envs()))
def test_an_env_folders_three_steps_take_the_same_parameters(name):
    env = find_env(name).env_class()
    cuda = {}
    for source in env.cuda_sources():
        cuda.update(cuda_kernels(source))
    numba = numba_kernels(env.numba_kernels())
    for shared in (tag_numba, nearest_numba):  # the twins of the Tag games' shared_cuda
        numba.update({k: v for k, v in numba_kernels(shared).items() if k in cuda})
    assert set(env.step_kernels) <= set(cuda)
    assert mismatches(cuda, numba) == []

    kernel_params = list(dict.fromkeys(p for k in env.step_kernels for p in cuda[k]))
    reference = list(inspect.signature(env.reference_step()).parameters)
    assert set(reference) == set(kernel_params) - SHAPE_SIZES
    if len(env.step_kernels) == 1:  # one kernel: the reference takes its names in its order
        assert reference == [p for p in kernel_params if p not in SHAPE_SIZES]


def test_a_renamed_or_dropped_parameter_is_caught():
    source, module = LAYERS["sampler"]
    cuda = cuda_kernels(source)
    numba = numba_kernels(module)
    renamed = {**numba, "sample_actions": ["probs", "action", *numba["sample_actions"][2:]]}
    assert mismatches(cuda, renamed) == [
        f"sample_actions: CUDA C takes {cuda['sample_actions']}, Numba {renamed['sample_actions']}"]
    swapped = {**numba, "argmax_actions": numba["argmax_actions"][::-1]}
    assert len(mismatches(cuda, swapped)) == 1
    dropped = {k: v for k, v in numba.items() if k != "argmax_actions"}
    assert mismatches(cuda, dropped) == ["argmax_actions: only in CUDA C"]
    header = "__device__ void wd_pair(unsigned int a, unsigned int* hi, const unsigned int* k) {}"
    assert cuda_device_functions(header) == {"wd_pair": ["a", "k"]}
