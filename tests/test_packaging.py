"""The package's promises about itself: what it needs, and that it imports anywhere."""

import importlib.metadata
import re
import subprocess
import sys
from pathlib import Path

import pytest
import tomllib
import yaml
from packaging.requirements import Requirement
from packaging.specifiers import SpecifierSet

REPO = Path(__file__).resolve().parents[1]
PYPROJECT = tomllib.loads((REPO / "pyproject.toml").read_text())
#: conda's names for the few packages whose PyPI name differs.
CONDA_NAME = {"torch": "pytorch"}


def pip_requirements():
    return {Requirement(r).name: Requirement(r) for r in PYPROJECT["project"]["dependencies"]}


def conda_requirements():
    env = yaml.safe_load((REPO / "environment.yml").read_text())
    found = {}
    for dep in env["dependencies"]:
        if isinstance(dep, str):
            name, spec = re.match(r"([A-Za-z0-9_.-]+)(.*)", dep.replace(" ", "")).groups()
            found[name] = SpecifierSet(spec)
    return found, env


def test_environment_yml_lists_every_dependency_with_the_same_bounds():
    conda, _ = conda_requirements()
    for name, requirement in pip_requirements().items():
        conda_name = CONDA_NAME.get(name, name)
        assert conda_name in conda, f"environment.yml lacks {conda_name} (pyproject: {name})"
        assert conda[conda_name] == requirement.specifier, (
            f"{name}: pyproject says {requirement.specifier}, environment.yml {conda[conda_name]}")


def test_environment_yml_has_nothing_pyproject_lacks():
    conda, env = conda_requirements()
    known = {CONDA_NAME.get(n, n) for n in pip_requirements()} | {"python", "pip"}
    assert set(conda) - known == set()
    requires_python = SpecifierSet(PYPROJECT["project"]["requires-python"])
    assert conda["python"] == requires_python
    assert {"pip": ["-e ."]} in env["dependencies"]


def test_python_versions_span_3_10_to_3_13():
    spec = SpecifierSet(PYPROJECT["project"]["requires-python"])
    assert all(v in spec for v in ["3.10", "3.11", "3.12", "3.13"])
    assert "3.9" not in spec and "3.14" not in spec


@pytest.mark.parametrize("numpy, allowed", [
    ("2.4.4", True), ("2.0.2", True), ("1.26.4", True), ("2.5.0", False), ("2.5.2", False)])
def test_numpy_versions_numba_cuda_cannot_compile_under_are_excluded(numpy, allowed):
    assert (numpy in pip_requirements()["numpy"].specifier) == allowed


@pytest.mark.parametrize("numba_cuda, allowed", [("0.30.4", True), ("0.31.0", False)])
def test_numba_cuda_is_pinned_to_the_line_with_the_simulator(numba_cuda, allowed):
    assert (numba_cuda in pip_requirements()["numba-cuda"].specifier) == allowed


def test_pycuda_is_an_extra_never_a_requirement():
    assert "pycuda" not in pip_requirements()
    extras = PYPROJECT["project"]["optional-dependencies"]
    assert any(r.startswith("pycuda") for r in extras["pycuda"])


def test_import_needs_no_gpu_no_nvcc_no_pycuda(tmp_path):
    """A fresh interpreter with nvcc and PyCUDA hidden still imports wd_teach and runs Numba."""
    hide = tmp_path / "sitecustomize.py"
    hide.write_text("import sys\nsys.modules['pycuda'] = None\n")
    code = ("import wd_teach, numpy as np; from wd_teach.demo import move;"
            "s = wd_teach.DataStore(2, 3); s.push('pos', np.zeros((2, 3), np.float32));"
            "s.push('vel', np.ones((2, 3), np.float32)); s.set_constant('dt', 1.0);"
            "launcher = wd_teach.KernelLauncher(s, 'numba'); launcher.load(move);"
            "launcher.launch('move'); print(s.pull('pos').sum(), wd_teach.discover().pycuda)")
    env = {"PATH": "/nonexistent", "PYTHONPATH": f"{tmp_path}:{REPO}", "HOME": str(tmp_path),
           "CUDA_VISIBLE_DEVICES": ""}
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env,
                          timeout=300)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["6.0", "None"]


def test_envs_ship_under_a_name_that_is_not_bare_envs():
    assert PYPROJECT["tool"]["setuptools"]["package-dir"]["wd_teach_envs"] == "envs"
    setup = (REPO / "setup.py").read_text()
    assert '"wd_teach_envs"' in setup and 'f"wd_teach_envs.{name}"' in setup


def test_the_wheel_carries_every_env_folder_with_its_kernels_and_config(tmp_path):
    """Packages and data are found from the folders: nothing lists an env by hand."""
    import zipfile

    from wd_teach.env.registry import ENV_FILES, shipped_envs

    needs = [Requirement(r) for r in PYPROJECT["build-system"]["requires"]]
    for requirement in needs:  # built offline, with what this environment has
        try:
            have = importlib.metadata.version(requirement.name)
        except importlib.metadata.PackageNotFoundError:
            pytest.skip(f"building a wheel needs {requirement}, which is not installed")
        if have not in requirement.specifier:
            pytest.skip(f"building a wheel needs {requirement}; this environment has {have}")
    done = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps",
                           "--no-build-isolation", str(REPO), "-w", str(tmp_path)],
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    names = set(zipfile.ZipFile(next(tmp_path.glob("*.whl"))).namelist())
    for env in shipped_envs():
        for file in ("__init__.py", *ENV_FILES):
            assert f"wd_teach_envs/{env}/{file}" in names, f"the wheel lacks {env}/{file}"
    kernels = sorted(p.relative_to(REPO).as_posix() for folder in ("wd_teach", "envs")
                     for p in (REPO / folder).rglob("*.cu*") if p.suffix in (".cu", ".cuh"))
    shipped = [k.replace("envs/", "wd_teach_envs/", 1) for k in kernels]
    assert kernels and [k for k in shipped if k not in names] == [], "the wheel lacks kernels"
