"""CUDA C without a GPU: signatures, argument checks, nvcc's PTX and its error messages."""

import fnmatch
import os
from pathlib import Path

import numpy as np
import pytest

from wd_teach import CompileError, DataStore, LaunchError, MissingPieceError, cuda_c
from wd_teach.device import nvcc_path
from wd_teach.launch import cuda_c_argument
from wd_teach.lessons.demo import DEMO_CUDA_C

REPO = Path(__file__).resolve().parents[1]
#: Folders that hold other people's files: version control, builds, virtual environments.
NOT_OURS = {".git", "build", "dist", "node_modules", "site-packages", "__pycache__"}


def project_files(root: Path, pattern: str) -> list[Path]:
    """The project's files matching `pattern` under `root`, leaving out virtual environments
    (any folder with a pyvenv.cfg, whatever its name: numba and torch ship .cu files) and
    build output."""
    found = []
    for folder, subfolders, files in os.walk(root):
        subfolders[:] = [d for d in subfolders if d not in NOT_OURS
                         and not (Path(folder, d) / "pyvenv.cfg").exists()]
        found += [Path(folder, f) for f in files if fnmatch.fnmatch(f, pattern)]
    return sorted(found)


CU_FILES = project_files(REPO, "*.cu")
#: The folders of the project's headers: an env's step.cu finds its game's header there, as
#: Env.include_dirs() lets it when the env is loaded.
HEADER_DIRS = sorted({p.parent for p in project_files(REPO, "*.cuh")})
needs_nvcc = pytest.mark.skipif(nvcc_path() is None, reason="nvcc is not on this machine")


def test_signatures_are_read_with_names_types_and_pointers():
    source = """
    // a comment with extern "C" __global__ void fake(int x) in it
    extern "C" __global__ void step(float* __restrict__ pos, const int* flags,
                                    unsigned int seed, float dt, unsigned char* done) {}
    __device__ void helper(float* x) {}
    """
    (params,) = cuda_c.kernel_signatures(source).values()
    assert [(p.name, p.ctype, p.pointer) for p in params] == [
        ("pos", "float", True), ("flags", "int", True), ("seed", "unsigned int", False),
        ("dt", "float", False), ("done", "unsigned char", True)]
    assert "".join(p.struct_format for p in params) == "PPIfP"


@pytest.mark.parametrize("param", ["double* x", "float** x", "long n", "MyStruct s"])
def test_unbindable_parameter_types_are_refused(param):
    with pytest.raises(LaunchError, match="cannot bind"):
        cuda_c.kernel_signatures(f'extern "C" __global__ void k({param}) {{}}')


def store_for_args():
    store = DataStore(2, 3)
    store.push("pos", np.zeros((2, 3), np.float32))
    store.push("count", np.zeros((2, 3), np.int32))
    store.set_constant("dt", 0.1)
    store.set_constant("offset", -1)
    return store


def param(text):
    (params,) = cuda_c.kernel_signatures(f'extern "C" __global__ void k({text}) {{}}').values()
    return params[0]


def test_arguments_are_checked_against_the_c_signature():
    store = store_for_args()
    assert cuda_c_argument(store, "k", param("float* pos"), "pos") == store["pos"].data_ptr()
    assert cuda_c_argument(store, "k", param("float dt"), "dt").dtype == np.float32
    assert cuda_c_argument(store, "k", param("int n"), "num_agents") == 3
    with pytest.raises(LaunchError, match="reads 'count' as float\\*, but 'count' holds int32"):
        cuda_c_argument(store, "k", param("float* count"), "count")
    with pytest.raises(LaunchError, match="is a pointer \\(float\\*\\), but 'dt' is a constant"):
        cuda_c_argument(store, "k", param("float* dt"), "dt")
    with pytest.raises(LaunchError, match="is a scalar \\(float\\), but 'pos' is an array"):
        cuda_c_argument(store, "k", param("float pos"), "pos")
    with pytest.raises(LaunchError, match="takes 'n' as int, but constant 'dt' is a float"):
        cuda_c_argument(store, "k", param("int n"), "dt")
    with pytest.raises(LaunchError, match="unsigned int, but constant 'offset' is negative"):
        cuda_c_argument(store, "k", param("unsigned int n"), "offset")


def test_source_is_read_from_a_file_or_text(tmp_path):
    path = tmp_path / "k.cu"
    path.write_text(DEMO_CUDA_C)
    assert cuda_c.read_source(path) == DEMO_CUDA_C
    assert cuda_c.read_source(str(path)) == DEMO_CUDA_C
    with pytest.raises(LaunchError, match="no CUDA C file"):
        cuda_c.read_source(str(tmp_path / "missing.cu"))


@needs_nvcc
@pytest.mark.parametrize("path", CU_FILES, ids=lambda p: str(p.relative_to(REPO)))
def test_every_cu_file_compiles_with_nvcc(path):
    text = cuda_c.ptx(path, extra_include_dirs=HEADER_DIRS)
    assert ".entry" in text or ".func" in text


@needs_nvcc
def test_ptx_of_the_demo_kernel_names_it():
    text = cuda_c.ptx(DEMO_CUDA_C)
    assert ".visible .entry move(" in text


@needs_nvcc
def test_compile_errors_show_nvcc_message_and_the_source_line():
    bad = DEMO_CUDA_C.replace("pos[i] += vel[i] * dt;", "pos[i] += velocity[i] * dt;")
    line = bad.splitlines().index("  pos[i] += velocity[i] * dt;") + 1
    with pytest.raises(CompileError) as err:
        cuda_c.ptx(bad)
    message = str(err.value)
    assert f'line {line}: error: identifier "velocity" is undefined' in message
    assert f"{line:>4} |   pos[i] += velocity[i] * dt;" in message


def test_missing_nvcc_is_explained(monkeypatch):
    monkeypatch.setattr(cuda_c, "nvcc_path", lambda: None)
    with pytest.raises(MissingPieceError, match="nvcc .* is not on this machine"):
        cuda_c.ptx(DEMO_CUDA_C)


def test_the_cu_files_checked_are_ours_not_a_virtual_environments(tmp_path):
    (tmp_path / "envs" / "game").mkdir(parents=True)
    (tmp_path / "envs" / "game" / "step.cu").write_text("")
    for venv in (".venv", "my-env"):  # found by its pyvenv.cfg, whatever its name
        (tmp_path / venv / "lib" / "numba").mkdir(parents=True)
        (tmp_path / venv / "pyvenv.cfg").write_text("home = /usr/bin\n")
        (tmp_path / venv / "lib" / "numba" / "helper.cu").write_text("")
    (tmp_path / "build" / "lib").mkdir(parents=True)
    (tmp_path / "build" / "lib" / "step.cu").write_text("")
    assert project_files(tmp_path, "*.cu") == [tmp_path / "envs" / "game" / "step.cu"]
    assert any(p.parts[-3:] == ("envs", "cartpole", "step.cu") for p in CU_FILES)
