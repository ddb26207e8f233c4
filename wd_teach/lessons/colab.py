"""Colab: the badge and the install cell at the top of every notebook, and the set-up they run.

A Colab runtime starts bare, so every notebook opens with an "Open in Colab" badge and a first
code cell of five lines that, on Colab only, pip-installs wd-teach from its source and then runs
`python -m wd_teach.lessons.colab`, which lands in `setup_colab()` here: the work is here, not
in the cell, which is the first code a learner meets. It runs in a process of its own, so the
learner's kernel imports numba only after everything below is installed, and the cell's `!`
shows every command's output as it comes.

Colab's GPU driver can be older than the CUDA that pip brings for Numba (its NVVM compiler);
the driver then refuses Numba's PTX (CUDA_ERROR_UNSUPPORTED_PTX_VERSION). So the extra that
brings NVVM (`cu12` or `cu13`) follows the driver's major version, and NVVM is pinned to the
driver's minor version, as the doctor advises (`wd_teach.device.nvvm_pin`). PyCUDA comes too
where nvcc is (Colab's GPU runtimes have it).

Both cells are made here from the repository URL in pyproject.toml ([project.urls] Homepage),
so the badge, the install source and the README never disagree: `scripts/colab_cells.py`
writes them into the notebooks (and the links into README.md and docs/), and
tests/test_colab.py checks that they are there.

PyCUDA has no wheels on PyPI: pip builds it from source, the longest part of the set-up. A
fresh Colab runtime forgets everything, so where Google Drive is mounted the built wheel is
kept there (`DRIVE_WHEELS`) and the next runtime installs it instead of building again.
"""

from __future__ import annotations

import importlib.metadata
import os
import re
import shlex
import subprocess
import sys
import time
from collections.abc import Mapping
from pathlib import Path

from wd_teach.device import _driver_cuda_version, nvcc_path, nvvm_pin
from wd_teach.errors import MissingPieceError

#: The branch that the badges open and that the install cell installs from.
BRANCH = "main"

BADGE = "https://colab.research.google.com/assets/colab-badge.svg"

#: The first line of the install cell, by which `place_cells` finds it again.
SETUP_CELL_HEAD = "# Colab only: install wd-teach"
#: First lines of install cells that `place_cells` replaces: its own, and the hand-written one
#: that notebooks started from before the cell was generated.
SETUP_CELL_HEADS = (SETUP_CELL_HEAD, "# On Colab (Runtime > Change runtime type > GPU)")
BADGE_HEAD = "[![Open In Colab]"

#: How long the set-up takes, as the install cell says. PyCUDA's build is the long part: its
#: sdist built in about two minutes on the GPU machine where it was timed; the whole cell has
#: not been timed on Colab, so `setup_colab` prints its own time when it ends.
SETUP_MINUTES = "a few minutes on a GPU runtime, mostly building PyCUDA"

#: Where a mounted Google Drive keeps the PyCUDA wheel that pip builds, for the next runtime.
DRIVE = Path("/content/drive/MyDrive")
DRIVE_WHEELS = DRIVE / "wd-teach" / "wheels"

#: Links to the repository in documents (README.md, docs/): their owner/name and branch
#: follow pyproject's Homepage (`relink`).
COLAB_LINK = re.compile(
    r"https://colab\.research\.google\.com/github/[\w.-]+/[\w.-]+/blob/[\w.-]+/")
INSTALL_LINK = re.compile(r"git\+https://github\.com/[\w.-]+/[\w.-]+@[\w.-]+")

NO_GPU = """\
This Colab runtime has no GPU. To get one: Runtime > Change runtime type > Hardware accelerator:
a GPU (T4 is free) > Save, then run this cell again. Without a GPU every lesson still runs, on
Numba's CUDA simulator at small size, and the PyCUDA cells show their CUDA C instead."""


def on_colab(environ: Mapping[str, str] = os.environ, modules: Mapping = sys.modules) -> bool:
    """True inside a Colab runtime: its kernel imports google.colab and sets COLAB_* variables."""
    return "google.colab" in modules or any(name.startswith("COLAB_") for name in environ)


def _github(repository: str) -> str:
    """'owner/name' of a https://github.com/owner/name URL."""
    match = re.fullmatch(r"https://github\.com/([\w.-]+/[\w.-]+?)(?:\.git)?/?", repository)
    if not match:
        raise ValueError(f"{repository!r} is not a https://github.com/OWNER/NAME URL: Colab opens "
                         "notebooks from GitHub, so pyproject's Homepage must be one")
    return match.group(1)


def colab_url(notebook: str, repository: str) -> str:
    """The address that opens a notebook of the repository on Colab."""
    return (f"https://colab.research.google.com/github/{_github(repository)}/blob/{BRANCH}/"
            f"notebooks/{notebook}")


def badge_cell(notebook: str, repository: str) -> str:
    """The markdown of a notebook's first cell: a badge that opens it on Colab."""
    return f"[![Open In Colab]({BADGE})]({colab_url(notebook, repository)})"


def install_source(repository: str) -> str:
    """What pip installs wd-teach from on Colab."""
    return f"git+https://github.com/{_github(repository)}@{BRANCH}"


def relink(text: str, repository: str) -> str:
    """A document with its Colab links and pip install sources pointed at `repository`."""
    text = COLAB_LINK.sub(colab_url("", repository).removesuffix("notebooks/"), text)
    return INSTALL_LINK.sub(install_source(repository), text)


def setup_cell(repository: str) -> str:
    """The first code cell of every notebook: short, since it is the first code a learner meets.
    On Colab it pip-installs wd-teach, then runs `python -m wd_teach.lessons.colab`
    (`setup_colab` here), which does the rest. IPython's `!` streams the commands' output into
    the cell as it comes, so a learner sees the install move; elsewhere the cell does nothing."""
    return f'''\
{SETUP_CELL_HEAD} and what this runtime's GPU needs (elsewhere: nothing).
# Time: {SETUP_MINUTES}. Steps: wd_teach/lessons/colab.py.
import sys
if "google.colab" in sys.modules:
    !pip install {install_source(repository)} && python -m wd_teach.lessons.colab'''


def _text(cell: dict) -> str:
    source = cell.get("source", "")
    return source if isinstance(source, str) else "".join(source)


def place_cells(cells: list[dict], notebook: str, repository: str) -> list[dict]:
    """A notebook's cells (as in its .ipynb JSON) with the badge as the first cell and the
    install cell as the first code cell: replaced where they are, inserted where they are not
    (the install cell after the title). Everything else is left as it was."""
    cells = [dict(cell) for cell in cells]
    badge = {"cell_type": "markdown", "id": "colab-badge", "metadata": {},
             "source": badge_cell(notebook, repository).splitlines(keepends=True)}
    if cells and cells[0]["cell_type"] == "markdown" and _text(cells[0]).startswith(BADGE_HEAD):
        cells[0] = {**cells[0], "source": badge["source"]}
    else:
        cells.insert(0, badge)
    setup = {"cell_type": "code", "execution_count": None, "id": "colab-setup", "metadata": {},
             "outputs": [], "source": setup_cell(repository).splitlines(keepends=True)}
    first = next((i for i, cell in enumerate(cells) if cell["cell_type"] == "code"), len(cells))
    if first < len(cells) and _text(cells[first]).startswith(SETUP_CELL_HEADS):
        if _text(cells[first]) != _text(setup):  # a new cell: what it showed is stale
            cells[first] = {**cells[first], **{k: setup[k] for k in ("source", "outputs",
                                                                      "execution_count")}}
    else:
        title = 2 if len(cells) > 1 and cells[1]["cell_type"] == "markdown" else 1
        cells.insert(min(first, title), setup)
    return cells


def extra_requirements(extra: str) -> list[str]:
    """The requirements that wd-teach's installed metadata lists for one extra (from
    pyproject.toml), so this module never repeats a version bound."""
    marker = re.compile(rf"""\s*;\s*extra\s*==\s*["']{re.escape(extra)}["']\s*$""")
    found = [marker.sub("", r) for r in importlib.metadata.requires("wd-teach") or []
             if marker.search(r)]
    if not found:
        raise MissingPieceError(f"wd-teach has no extra {extra!r}: reinstall wd-teach")
    return found


def nvvm_requirements(driver: tuple[int, int]) -> list[str]:
    """The requirements of the doctor's advice (`nvvm_pin`) for this driver."""
    words = shlex.split(nvvm_pin(driver).split(", then")[0])
    if words[:2] != ["pip", "install"]:
        raise AssertionError(f"nvvm_pin no longer gives a pip command: {nvvm_pin(driver)!r}")
    return words[2:]


def colab_requirements(driver: tuple[int, int], nvcc: bool) -> list[str]:
    """What a GPU runtime with this driver needs beyond wd-teach's own requirements."""
    major, minor = driver
    if major < 12:
        raise MissingPieceError(
            f"this runtime's driver supports CUDA {major}.{minor}; wd-teach's Numba needs CUDA "
            "12 or newer. Runtime > Disconnect and delete runtime, then connect again for a "
            "newer one.")
    extra = "cu12" if major == 12 else "cu13"
    return [*extra_requirements(extra), *nvvm_requirements(driver),
            *(extra_requirements("pycuda") if nvcc else [])]


def _run(*args: str) -> subprocess.CompletedProcess:
    print("$", " ".join(shlex.quote(a) for a in args), flush=True)
    return subprocess.run(args, check=False)


def _pip(*args: str) -> bool:
    return _run(sys.executable, "-m", "pip", *args).returncode == 0


def install(driver: tuple[int, int], nvcc: bool, wheels: Path | None) -> bool:
    """pip-install what a runtime with this driver needs. With a `wheels` folder (on Drive),
    PyCUDA's wheel is built into it first, or found there from an earlier runtime, and the
    install takes it from there. True when every step succeeded."""
    requirements = colab_requirements(driver, nvcc)
    links = []
    if nvcc and wheels is not None:
        wheels.mkdir(parents=True, exist_ok=True)
        links = ["--find-links", str(wheels)]
        if not _pip("wheel", "--no-deps", *links, "--wheel-dir", str(wheels),
                    *extra_requirements("pycuda")):
            return False
    return _pip("install", *links, *requirements)


def _wheel_folder(nvcc: bool) -> Path | None:
    """Drive's wheel folder where Drive is mounted; else None, after a tip on mounting it."""
    if not nvcc:
        return None
    if DRIVE.is_dir():
        print(f"Google Drive is mounted: PyCUDA's wheel is kept in {DRIVE_WHEELS}, built only "
              "if it is not there yet (delete the folder to build it again).", flush=True)
        return DRIVE_WHEELS
    print("PyCUDA builds from source (about 2 minutes). To build it only once, mount Google "
          "Drive (Files pane > Mount Drive) before this cell: the wheel is then kept there for "
          "your next runtime.", flush=True)
    return None


def setup_colab() -> int:
    """Install what this runtime's GPU needs, then print the doctor's table. Returns 0 when the
    lessons can run (on the GPU, or on the simulator without one)."""
    start = time.monotonic()
    driver = _driver_cuda_version()
    if driver is None:
        print(NO_GPU, end="\n\n", flush=True)
    else:
        nvcc = nvcc_path() is not None
        print(f"GPU driver for CUDA {driver[0]}.{driver[1]}: installing what Numba"
              f"{' and PyCUDA' if nvcc else ''} need for it.", flush=True)
        if not install(driver, nvcc, _wheel_folder(nvcc)):
            print("The install failed (see above). Run this cell again; if it fails again, "
                  "Runtime > Disconnect and delete runtime, and start over.", flush=True)
            return 1
    # A new process sees what was just installed; this one imported numba before.
    doctor = _run(sys.executable, "-m", "wd_teach.cli", "doctor")
    print(f"Set-up done in {time.monotonic() - start:.0f} s.", flush=True)
    if doctor.returncode == 0:
        print("\nReady: run the next cells. If this session had imported wd_teach or numba before "
              "this cell, restart it first (Runtime > Restart session).", flush=True)
    return doctor.returncode


if __name__ == "__main__":
    sys.exit(setup_colab())
