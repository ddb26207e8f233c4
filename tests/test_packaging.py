"""The package's promises about itself: what it needs, and that it imports anywhere."""

import importlib.metadata
import os
import re
import shutil
import site
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


@pytest.mark.parametrize("extra", ["pycuda", "video"])
def test_environment_yml_says_how_to_get_what_it_leaves_out(extra):
    """Each optional extra that environment.yml does not list (PyCUDA: it needs a driver and
    nvcc; imageio-ffmpeg: play's mp4, GIF without it) is named in its comments with the
    conda command that brings it, so the file does not promise what it lacks."""
    conda, _ = conda_requirements()
    comments = "\n".join(line for line in (REPO / "environment.yml").read_text().splitlines()
                         if line.startswith("#"))
    for requirement in map(Requirement, PYPROJECT["project"]["optional-dependencies"][extra]):
        if requirement.name not in conda:
            assert "is not listed" in comments and (
                f"conda install -c conda-forge {requirement.name}" in comments), (
                f"environment.yml neither lists {requirement.name} nor says how to get it")


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
    code = ("import wd_teach, numpy as np; from wd_teach.lessons.demo import move;"
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


# -- the wheel, built and installed as a user would ---------------------------------------------

#: What the wheel must carry beside the Python files: kernels, headers, configs.
DATA_SUFFIXES = (".cu", ".cuh", ".yaml")
#: CartPole at toy size from the command line: a run of one iteration takes seconds.
TINY_RUN = ["--iterations", "1", "--envs", "4", "--set", "trainer.steps=8",
            "--set", "algorithm.num_minibatches=2", "--quiet"]


def quiet_environment(**more) -> dict:
    """The environment for a build or an installed command: no PYTHONPATH (nothing may come
    from the checkout), and byte-compiling allowed (where it is off, setuptools says so in a
    line that starts with 'warning:', which is about this machine, not the package)."""
    env = {k: v for k, v in os.environ.items()
           if k not in ("PYTHONPATH", "PYTHONDONTWRITEBYTECODE")}
    return {**env, **more}


def warnings_in(output: str) -> list[str]:
    return [line for line in output.splitlines() if re.search(r"warn", line, re.IGNORECASE)]


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> tuple[Path, str]:
    """The wheel built from the checkout offline, with what this environment has, and
    everything the build printed (pip -v shows the build backend's own output)."""
    needs = [Requirement(r) for r in PYPROJECT["build-system"]["requires"]]
    for requirement in needs:
        try:
            have = importlib.metadata.version(requirement.name)
        except importlib.metadata.PackageNotFoundError:
            pytest.skip(f"building a wheel needs {requirement}, which is not installed")
        if have not in requirement.specifier:
            pytest.skip(f"building a wheel needs {requirement}; this environment has {have}")
    folder = tmp_path_factory.mktemp("wheel")
    # From a copy without build outputs: setuptools builds in the source tree and would ship
    # whatever an earlier build left in build/lib, and would leave its own there.
    source = Path(shutil.copytree(REPO, folder / "source", ignore=shutil.ignore_patterns(
        ".git", ".venv", "build", "dist", "*.egg-info", "__pycache__", "runs")))
    done = subprocess.run([sys.executable, "-m", "pip", "wheel", "-v", "--no-deps",
                           "--no-build-isolation", "--no-index", str(source), "-w", str(folder)],
                          capture_output=True, text=True, timeout=600, env=quiet_environment())
    assert done.returncode == 0, done.stderr
    return next(folder.glob("*.whl")), done.stdout + done.stderr


def test_building_the_wheel_prints_no_warning(wheel):
    _, output = wheel
    assert warnings_in(output) == []


def test_envs_ship_under_a_name_that_is_not_bare_envs(wheel):
    import zipfile

    assert PYPROJECT["tool"]["setuptools"]["package-dir"]["wd_teach_envs"] == "envs"
    names = zipfile.ZipFile(wheel[0]).namelist()
    tops = {n.split("/")[0] for n in names if ".dist-info/" not in n}
    assert tops == {"wd_teach", "wd_teach_envs"}
    assert not [n for n in names if "__pycache__" in n]


def test_the_wheel_carries_every_env_folder_with_its_kernels_and_config(wheel):
    """Packages and data are found from the folders: nothing lists an env by hand."""
    import zipfile

    from wd_teach.env.registry import ENV_FILES, shipped_envs

    names = set(zipfile.ZipFile(wheel[0]).namelist())
    for env in shipped_envs():
        for file in ("__init__.py", *ENV_FILES):
            assert f"wd_teach_envs/{env}/{file}" in names, f"the wheel lacks {env}/{file}"


def test_the_wheel_carries_every_kernel_header_and_config_of_the_source_tree(wheel):
    import zipfile

    names = set(zipfile.ZipFile(wheel[0]).namelist())
    source = sorted(p.relative_to(REPO).as_posix() for folder in ("wd_teach", "envs")
                    for p in (REPO / folder).rglob("*") if p.suffix in DATA_SUFFIXES)
    assert {Path(s).suffix for s in source} == set(DATA_SUFFIXES)  # each kind is there
    shipped = [s.replace("envs/", "wd_teach_envs/", 1) for s in source]
    assert [s for s in shipped if s not in names] == [], "the wheel lacks these"
    in_wheel = sorted(n for n in names if n.endswith(DATA_SUFFIXES))
    assert in_wheel == sorted(shipped), "the wheel has data files the source tree lacks"


def test_the_installed_wheel_runs_doctor_and_trains_outside_the_checkout(wheel, tmp_path):
    """Installed NOT editable into a new virtual environment that sees this one's packages
    (offline: --no-deps --no-index), then run from a folder outside the checkout: every
    import comes from the wheel, as on a user's machine."""
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True,
                   timeout=120)
    python = venv / "bin" / "python"
    site_packages = subprocess.run([python, "-c", "import sysconfig; print(sysconfig."
                                    "get_paths()['purelib'])"], capture_output=True, text=True,
                                   check=True).stdout.strip()
    # This environment's packages, their .pth files processed (site.addsitedir), after the
    # new environment's own: what --system-site-packages does for a base interpreter.
    # Folders on PYTHONPATH (a GPU machine's kit, say) are this environment too; the
    # checkout is not, so that nothing can be imported from it.
    extra = [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep)
             if p and Path(p).resolve() != REPO]
    lines = [f"import site; site.addsitedir({p!r})" for p in [*site.getsitepackages(), *extra]]
    (Path(site_packages) / "_this_environment.pth").write_text("\n".join(lines) + "\n")
    env = quiet_environment()
    done = subprocess.run([python, "-m", "pip", "install", "--no-deps", "--no-index",
                           "--ignore-installed", str(wheel[0])], capture_output=True, text=True,
                          timeout=300, env=env, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert warnings_in(done.stdout + done.stderr) == []

    where = subprocess.run([python, "-c", "import wd_teach, wd_teach_envs; print(wd_teach."
                            "__file__); print(wd_teach_envs.__file__)"], capture_output=True,
                           text=True, env=env, cwd=tmp_path, timeout=300)
    assert where.returncode == 0, where.stderr
    assert all(Path(f).is_relative_to(venv) for f in where.stdout.split()), where.stdout
    command = venv / "bin" / "wd-teach"
    doctor = subprocess.run([command, "doctor"], capture_output=True, text=True, env=env,
                            cwd=tmp_path, timeout=300)
    assert doctor.returncode == 0, doctor.stdout + doctor.stderr
    assert "backends that can run here" in doctor.stdout
    run = subprocess.run([command, "train", "cartpole", *TINY_RUN, "--out", "run"],
                         capture_output=True, text=True, env=env, cwd=tmp_path, timeout=300)
    assert run.returncode == 0, run.stdout + run.stderr
    assert {"config.yaml", "metrics.csv", "checkpoint.safetensors"} <= {
        p.name for p in (tmp_path / "run").iterdir()}


def test_compute_sanitizer_has_an_extra_for_each_driver_line(monkeypatch):
    """Lesson 10's compute-sanitizer from pip, where no toolkit brings it: NVIDIA's 13.x wheel
    for a CUDA 13 driver, the -cu12 one for older drivers (Colab's), each an extra that the
    message for a missing tool names."""
    extras = PYPROJECT["project"]["optional-dependencies"]
    wants = {"sanitizer": ("nvidia-cuda-sanitizer-api", "13.4.92", "12.9.0"),
             "sanitizer-cu12": ("nvidia-cuda-sanitizer-api-cu12", "12.9.79", "13.0.0")}
    for extra, (name, fits, not_fits) in wants.items():
        (requirement,) = map(Requirement, extras[extra])
        assert requirement.name == name
        assert fits in requirement.specifier and not_fits not in requirement.specifier
    from wd_teach.fundamentals import sanitizer

    monkeypatch.setattr(sanitizer, "find_compute_sanitizer", lambda: None)
    with pytest.raises(FileNotFoundError) as missing:
        sanitizer.sanitize("write_unguarded")
    assert "wd-teach[sanitizer]" in str(missing.value)
    assert "wd-teach[sanitizer-cu12]" in str(missing.value)
