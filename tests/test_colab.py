"""Colab: every notebook opens with the badge and the install cell, and the install works."""

import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import tomllib
from IPython.core.inputtransformer2 import TransformerManager

import wd_teach
from wd_teach.errors import MissingPieceError
from wd_teach.lessons import colab

REPO = Path(__file__).resolve().parents[1]
NOTEBOOKS = sorted((REPO / "notebooks").glob("*.ipynb"))
REPOSITORY = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["urls"]["Homepage"]


def _text(cell):
    return "".join(cell["source"])


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_notebook_opens_with_the_colab_badge_and_the_install_cell(path):
    cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
    fix = "run `python scripts/colab_cells.py` to put the generated cells in"
    assert _text(cells[0]) == colab.badge_cell(path.name, REPOSITORY), fix
    first_code = next(cell for cell in cells if cell["cell_type"] == "code")
    assert _text(first_code) == colab.setup_cell(REPOSITORY), fix


def test_the_install_cell_is_at_most_five_short_lines():
    """The first code a learner meets is the set-up: it stays short, the work is in
    wd_teach.lessons.colab."""
    lines = colab.setup_cell(REPOSITORY).splitlines()
    assert len(lines) <= 5, colab.setup_cell(REPOSITORY)
    assert max(map(len, lines)) <= 100


def test_badge_opens_this_notebook_from_the_repository_on_colab():
    badge = colab.badge_cell("01_data_push.ipynb", "https://github.com/someone/fork")
    assert badge.endswith("(https://colab.research.google.com/github/someone/fork/blob/main/"
                          "notebooks/01_data_push.ipynb)")
    assert colab.install_source("https://github.com/someone/fork.git") == (
        "git+https://github.com/someone/fork@main")
    with pytest.raises(ValueError, match="github.com/OWNER/NAME"):
        colab.badge_cell("01_data_push.ipynb", "https://example.org/wd-teach")


def test_readme_installs_from_the_same_repository():
    readme = (REPO / "README.md").read_text()
    assert colab.install_source(REPOSITORY) in readme
    assert colab.colab_url("00_welcome.ipynb", REPOSITORY) in readme


@pytest.mark.parametrize("document", ["README.md", "docs/teaching.md", "notebooks/README.md"])
def test_every_link_to_the_repository_follows_pyproject(document):
    """`python scripts/colab_cells.py` rewrites these links from pyproject's Homepage; a link
    to another repository (a copy of an old address) fails here."""
    text = (REPO / document).read_text()
    fix = f"run `python scripts/colab_cells.py` to point {document}'s links at {REPOSITORY}"
    assert colab.relink(text, REPOSITORY) == text, fix
    assert colab.COLAB_LINK.search(text) or colab.INSTALL_LINK.search(text), (
        f"{document} has no Colab link to check")


def test_relink_points_colab_links_and_install_sources_at_another_repository():
    text = ("[00](https://colab.research.google.com/github/wd-teach/wd-teach/blob/main/notebooks/"
            "00_welcome.ipynb) and `pip install git+https://github.com/wd-teach/wd-teach@main`")
    moved = colab.relink(text, "https://github.com/someone/fork")
    assert moved == ("[00](https://colab.research.google.com/github/someone/fork/blob/main/"
                     "notebooks/00_welcome.ipynb) and "
                     "`pip install git+https://github.com/someone/fork@main`")
    assert colab.relink(moved, "https://github.com/someone/fork") == moved


def test_placing_the_cells_twice_changes_nothing_and_keeps_every_other_cell():
    title = {"cell_type": "markdown", "id": "t", "metadata": {}, "source": ["# 09 · Title"]}
    code = {"cell_type": "code", "id": "c", "metadata": {}, "outputs": [],
            "execution_count": None, "source": ["x = 1"]}
    once = colab.place_cells([title, code], "09_x.ipynb", REPOSITORY)
    assert [c["id"] for c in once] == ["colab-badge", "t", "colab-setup", "c"]
    assert colab.place_cells(once, "09_x.ipynb", REPOSITORY) == once
    old = {**code, "id": "old", "source": ["# On Colab (Runtime > Change runtime type > GPU), it"]}
    replaced = colab.place_cells([title, old, code], "09_x.ipynb", REPOSITORY)
    assert [c["id"] for c in replaced] == ["colab-badge", "t", "old", "c"]
    assert _text(replaced[2]) == colab.setup_cell(REPOSITORY)


def test_colab_is_recognised_by_its_module_or_its_variables():
    assert colab.on_colab({}, {"google.colab": object()})
    assert colab.on_colab({"COLAB_RELEASE_TAG": "release-colab_20260101"}, {})
    assert not colab.on_colab({"HOME": "/root"}, {"sys": sys})


@pytest.mark.parametrize("driver, nvcc, want, unwanted", [
    ((12, 4), True, ["numba-cuda[cu12]", "nvidia-cuda-nvcc-cu12==12.4.*", "pycuda"], ["cu13"]),
    ((13, 0), True, ["numba-cuda[cu13]", "nvidia-nvvm==13.0.*", "pycuda"], ["cu12"]),
    ((12, 8), False, ["numba-cuda[cu12]", "nvidia-cuda-nvcc-cu12==12.8.*"], ["pycuda"]),
])
def test_requirements_follow_the_driver(driver, nvcc, want, unwanted):
    requirements = " ".join(colab.colab_requirements(driver, nvcc))
    for piece in want:
        assert piece in requirements
    for piece in unwanted:
        assert piece not in requirements
    assert "numba-cuda" in requirements and "<0.31" in requirements


def test_a_driver_too_old_for_numba_is_refused_with_what_to_do():
    with pytest.raises(MissingPieceError, match="CUDA 11.8.*CUDA 12 or newer.*Runtime"):
        colab.colab_requirements((11, 8), True)


def test_setup_on_a_gpu_runtime_installs_for_its_driver_then_runs_the_doctor(monkeypatch):
    ran = []
    monkeypatch.setattr(colab, "_driver_cuda_version", lambda: (12, 4))
    monkeypatch.setattr(colab, "nvcc_path", lambda: "/usr/local/cuda/bin/nvcc")
    monkeypatch.setattr(colab, "_run",
                        lambda *a: ran.append(a) or subprocess.CompletedProcess(a, 0))
    monkeypatch.setattr(colab, "DRIVE", Path("/nonexistent/drive"))
    assert colab.setup_colab() == 0
    pip, doctor = ran
    assert pip[1:4] == ("-m", "pip", "install")
    assert list(pip[4:]) == colab.colab_requirements((12, 4), True)
    assert doctor[1:] == ("-m", "wd_teach.cli", "doctor")


def test_with_drive_mounted_pycuda_is_built_into_drive_once_and_installed_from_there(
        monkeypatch, tmp_path, capfd):
    ran = []
    monkeypatch.setattr(colab, "_driver_cuda_version", lambda: (12, 4))
    monkeypatch.setattr(colab, "nvcc_path", lambda: "/usr/local/cuda/bin/nvcc")
    monkeypatch.setattr(colab, "DRIVE", tmp_path)
    monkeypatch.setattr(colab, "DRIVE_WHEELS", tmp_path / "wd-teach" / "wheels")
    monkeypatch.setattr(colab, "_run",
                        lambda *a: ran.append(a) or subprocess.CompletedProcess(a, 0))
    assert colab.setup_colab() == 0
    wheel, pip, _ = ran
    wheels = str(tmp_path / "wd-teach" / "wheels")
    assert wheel[3:] == ("wheel", "--no-deps", "--find-links", wheels, "--wheel-dir", wheels,
                         *colab.extra_requirements("pycuda"))
    assert pip[3:6] == ("install", "--find-links", wheels)
    assert list(pip[6:]) == colab.colab_requirements((12, 4), True)
    assert (tmp_path / "wd-teach" / "wheels").is_dir()
    assert f"kept in {wheels}" in capfd.readouterr().out


def test_without_drive_the_setup_says_how_to_keep_the_build(monkeypatch, capfd):
    monkeypatch.setattr(colab, "DRIVE", Path("/nonexistent/drive"))
    assert colab._wheel_folder(nvcc=True) is None
    assert "mount Google Drive" in capfd.readouterr().out
    assert colab._wheel_folder(nvcc=False) is None  # no PyCUDA, nothing to keep


def test_a_failed_build_stops_the_setup_before_the_install(monkeypatch, tmp_path, capfd):
    ran = []
    monkeypatch.setattr(colab, "_driver_cuda_version", lambda: (12, 4))
    monkeypatch.setattr(colab, "nvcc_path", lambda: "/usr/local/cuda/bin/nvcc")
    monkeypatch.setattr(colab, "DRIVE", tmp_path)
    monkeypatch.setattr(colab, "DRIVE_WHEELS", tmp_path / "wheels")
    monkeypatch.setattr(colab, "_run",
                        lambda *a: ran.append(a) or subprocess.CompletedProcess(a, 1))
    assert colab.setup_colab() == 1
    assert [step[3] for step in ran] == ["wheel"]
    assert "The install failed" in capfd.readouterr().out


def test_setup_without_a_gpu_says_how_to_select_one(monkeypatch, capfd):
    monkeypatch.setattr(colab, "_driver_cuda_version", lambda: None)
    assert colab.setup_colab() == 0
    out = capfd.readouterr().out
    assert "Runtime > Change runtime type" in out and "simulator" in out
    assert re.search(r"^Set-up done in \d+ s\.$", out, re.MULTILINE)  # it says how long
    assert "backends that can run here: " + ", ".join(wd_teach.discover().backends) in out


def package_index_reachable() -> bool:
    """Whether pip can reach its package index from here (asked once, without retries)."""
    found = subprocess.run([sys.executable, "-m", "pip", "index", "versions", "pip",
                            "--retries", "0", "--timeout", "10"], capture_output=True)
    return found.returncode == 0


#: Runs a cell as IPython would, with `get_ipython().system` (what a `!` line becomes) handing
#: the command to the shell; with "colab" as first argument google.colab is importable, as on
#: Colab. A failed command ends the run with its exit status.
RUNNER = """\
import subprocess, sys, types
if sys.argv[1] == "colab":
    sys.modules["google.colab"] = types.ModuleType("google.colab")
class Shell:
    def system(self, command):
        print("$", command, flush=True)
        if subprocess.run(command, shell=True).returncode:
            sys.exit(1)
get_ipython = Shell
exec(sys.argv[2])
"""


def _run_cell(python, env, where="colab", cwd=None, source=None):
    cell = colab.setup_cell(REPOSITORY)
    if source is not None:
        cell = cell.replace(colab.install_source(REPOSITORY), source)
    code = TransformerManager().transform_cell(cell)
    return subprocess.run([python, "-c", RUNNER, where, code], capture_output=True, text=True,
                          env=env, cwd=cwd, timeout=1200)


def test_on_colab_the_install_cell_installs_wd_teach_then_runs_the_set_up(tmp_path):
    """On 'Colab' the cell runs one shell command: pip installs wd-teach from the repository,
    then `python -m wd_teach.lessons.colab` does the rest (here stand-ins for both print)."""
    for name, says in [("pip", "pip $*"), ("python", "python $*")]:
        (tmp_path / name).write_text(f"#!/bin/sh\necho {says}\n")
        (tmp_path / name).chmod(0o755)
    env = {**os.environ, "PATH": f"{tmp_path}:{os.environ['PATH']}"}
    done = _run_cell(sys.executable, env)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[1:] == [
        f"pip install {colab.install_source(REPOSITORY)}", "python -m wd_teach.lessons.colab"]
    assert colab.SETUP_MINUTES in colab.setup_cell(REPOSITORY)


def test_the_install_cell_does_nothing_off_colab():
    done = _run_cell(sys.executable, dict(os.environ), where="here")
    assert done.returncode == 0, done.stderr
    assert done.stdout == ""


@pytest.mark.slow
def test_the_install_cell_installs_wd_teach_into_a_fresh_environment(tmp_path):
    """A bare Python with torch (as Colab has) runs the cell 'on Colab', installing from a copy
    of this checkout; wd-teach then imports with every module, and the doctor runs."""
    if not package_index_reachable():
        pytest.skip("installing needs the package index, which this machine cannot reach "
                    "(the GPU machine has no network; CI runs this test)")
    source = tmp_path / "source"
    ignore = shutil.ignore_patterns("__pycache__", "*.egg-info", "build")
    for part in ["wd_teach", "envs"]:
        shutil.copytree(REPO / part, source / part, ignore=ignore)
    for part in ["pyproject.toml", "README.md"]:
        shutil.copy(REPO / part, source / part)
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", venv], check=True)
    python = str(venv / "bin" / "python")
    torch = os.environ.get("TORCH_SPEC", "torch==2.13.0")  # as scripts/venv.sh
    subprocess.run([python, "-m", "pip", "install", "-q", torch], check=True, timeout=1200)
    env = {**os.environ, "PYTHONPATH": "", "VIRTUAL_ENV": str(venv),
           "PATH": f"{venv / 'bin'}:{os.environ['PATH']}"}  # the cell's pip and python
    env.pop("NUMBA_ENABLE_CUDASIM", None)
    done = _run_cell(python, env, cwd=tmp_path, source=str(source))  # not the checkout
    assert done.returncode == 0, done.stdout + done.stderr
    has_gpu = importlib.util.find_spec("torch") and __import__("torch").cuda.is_available()
    if not has_gpu:
        assert "This Colab runtime has no GPU" in done.stdout
    assert "backends that can run here: numba" in done.stdout

    # Every module of the checkout is installed (not only the top-level packages); a module
    # that needs an optional package (e.g. Lightning) only has to be there.
    modules = sorted({".".join((package, *p.relative_to(source / folder).with_suffix("").parts))
                      .removesuffix(".__init__")
                      for package, folder in [("wd_teach", "wd_teach"), ("wd_teach_envs", "envs")]
                      for p in (source / folder).rglob("*.py")})
    check = ("import importlib, sys; missing = []\n"
             "for m in sys.argv[1:]:\n"
             "    try: importlib.import_module(m)\n"
             "    except ModuleNotFoundError as e:\n"
             "        if e.name.startswith('wd_teach'): missing.append(f'{m}: {e}')\n"
             "print('\\n'.join(missing)); sys.exit(bool(missing))")
    imported = subprocess.run([python, "-c", check, *modules], capture_output=True, text=True,
                              env=env, cwd=tmp_path, timeout=600)
    assert imported.returncode == 0, "not installed:\n" + imported.stdout + imported.stderr

    # ... and every data file (CUDA C, configs) beside them.
    site = subprocess.run([python, "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
                          capture_output=True, text=True, check=True).stdout.strip()
    for package, folder in [("wd_teach", "wd_teach"), ("wd_teach_envs", "envs")]:
        want = {p.relative_to(source / folder) for p in (source / folder).rglob("*")
                if p.is_file() and "__pycache__" not in p.parts and p.suffix != ".pyc"}
        got = {p.relative_to(Path(site, package)) for p in Path(site, package).rglob("*")
               if p.is_file() and "__pycache__" not in p.parts}
        assert sorted(want - got) == [], f"{package}: the wheel leaves these out"


def test_colab_cells_check_finds_every_notebook_up_to_date():
    """`scripts/colab_cells.py --check` (what to run after adding a notebook) reads the list of
    notebooks from the folder, so a new one is checked without a change here."""
    done = subprocess.run([sys.executable, str(REPO / "scripts" / "colab_cells.py"), "--check"],
                          capture_output=True, text=True, cwd=REPO, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
