"""Every lesson on main carries the outputs of one run on a GPU (scripts/gpu_outputs.py).

A reader on GitHub or in the book sees the numbers, tables and figures of a real run, and
the notebook's metadata says where they came from: the GPU, the backend, the versions of
torch, numba-cuda and PyCUDA, and the date. nbval still runs every notebook on the CPU
(outputs that vary are not compared), so these outputs are what a GPU shows, not what CI
checks.
"""

from __future__ import annotations

import datetime
import hashlib
import re
from pathlib import Path

import nbformat
import pytest

NOTEBOOKS = sorted((Path(__file__).parents[1] / "notebooks").glob("[0-9][0-9]_*.ipynb"))
PROVENANCE = ("gpu", "backend", "torch", "numba_cuda", "pycuda", "date")


@pytest.fixture(params=NOTEBOOKS, ids=lambda path: path.stem)
def notebook(request):
    return nbformat.read(request.param, as_version=4)


def test_every_lesson_says_which_gpu_run_made_its_outputs(notebook):
    made = notebook.metadata.get("wd_teach", {}).get("outputs")
    assert made, "no outputs saved: run scripts/gpu_outputs.py on a GPU machine"
    missing = [key for key in PROVENANCE if not made.get(key)]
    assert not missing, f"outputs metadata lacks {missing}"
    assert "NVIDIA" in made["gpu"], made["gpu"]
    assert made["backend"] in ("pycuda", "numba")
    datetime.date.fromisoformat(made["date"])


def test_every_code_cell_ran_in_that_run(notebook):
    cells = [cell for cell in notebook.cells if cell.cell_type == "code"]
    never_ran = [i for i, cell in enumerate(cells) if cell.execution_count is None]
    assert not never_ran, f"code cells {never_ran} were not run in the saved run"
    counts = [cell.execution_count for cell in cells]
    assert counts == sorted(counts), "cells were run out of order"


def test_most_code_cells_show_something(notebook):
    """A cell may define a function and print nothing; a lesson whose cells mostly print
    nothing was saved from a run that went wrong (or was cleared)."""
    cells = [cell for cell in notebook.cells if cell.cell_type == "code"]
    shown = sum(bool(cell.outputs) for cell in cells)
    assert shown >= len(cells) // 2, f"only {shown} of {len(cells)} code cells show output"


def test_no_saved_output_is_an_error(notebook):
    errors = [output.get("ename") for cell in notebook.cells if cell.cell_type == "code"
              for output in cell.outputs if output.output_type == "error"]
    assert not errors, errors


def test_a_stamped_lessons_code_is_the_code_that_made_its_outputs(notebook):
    """scripts/gpu_outputs.py saves a hash of each code cell's source with the outputs: a
    cell changed after that run shows outputs its code no longer makes, so the lesson is run
    again on a GPU. (A cell that prints a file of the repository, a kernel's source say,
    changes output when only the file changes, which the hash of the cell's own text cannot
    see: nbval compares those, test_cells_that_print_the_repositorys_code_are_compared.)"""
    stamps = notebook.metadata.get("wd_teach", {}).get("outputs", {}).get("code_cells")
    assert stamps is not None, (
        "its outputs carry no hashes of the code that made them: run scripts/gpu_outputs.py "
        "on a GPU machine")
    cells = [cell for cell in notebook.cells if cell.cell_type == "code"]
    now = [hashlib.sha256("".join(cell.source).encode()).hexdigest()[:12] for cell in cells]
    assert len(now) == len(stamps), (
        f"{len(cells)} code cells now, {len(stamps)} when the outputs were made: run "
        "scripts/gpu_outputs.py on a GPU machine")
    changed = [f"code cell {i}: {(cells[i].source.splitlines() or [''])[0]!r}"
               for i, (stamp, hashed) in enumerate(zip(stamps, now, strict=True))
               if stamp != hashed]
    assert not changed, (
        f"changed since its outputs were made, {'; '.join(changed)}: run "
        "scripts/gpu_outputs.py on a GPU machine")


PRINTS_CODE = ("cuda_function(", "python_function(", "getsource(", ".read_text(")
ASKS_THE_MACHINE = re.compile(r"\bgpu\b|nvcc")  # prints what this machine has or can do


def test_cells_that_print_the_repositorys_code_are_compared(notebook):
    """A cell that prints a kernel, a function or a file of the repository shows the same
    text on any machine, so nbval compares its saved output with what the CPU run prints
    (the tag `nbval-check-output`; every other output varies and is not compared): when the
    code it prints has changed since the GPU run, CI fails and names the cell. A cell that
    also asks the machine (is there a GPU, nvcc: lesson 10's ptxas counts and its
    compute-sanitizer table) prints other things elsewhere, and is not compared."""
    def named(i, cell):
        return f"code cell {i}: {(cell.source.splitlines() or [''])[0]!r}"

    cells = list(enumerate(c for c in notebook.cells if c.cell_type == "code"))
    compared = {i for i, cell in cells if "nbval-check-output" in cell.metadata.get("tags", [])}
    same_anywhere = {i for i, cell in cells
                     if "print(" in cell.source and any(m in cell.source for m in PRINTS_CODE)
                     and not ASKS_THE_MACHINE.search(cell.source)}
    untagged = [named(i, cell) for i, cell in cells if i in same_anywhere - compared]
    assert not untagged, f"prints the repository's code, untagged: {'; '.join(untagged)}"
    machine = [named(i, cell) for i, cell in cells
               if i in compared and ASKS_THE_MACHINE.search(cell.source)]
    assert not machine, f"compared, but prints what the machine has: {'; '.join(machine)}"


def test_the_stamp_names_a_changed_cell():
    """The check above fails for a cell edited after the run (and passes as saved)."""
    path = next(p for p in NOTEBOOKS if nbformat.read(p, as_version=4).metadata.get(
        "wd_teach", {}).get("outputs", {}).get("code_cells"))
    notebook = nbformat.read(path, as_version=4)
    test_a_stamped_lessons_code_is_the_code_that_made_its_outputs(notebook)
    code = [cell for cell in notebook.cells if cell.cell_type == "code"]
    code[-1].source += "\nprint('edited')"
    with pytest.raises(AssertionError, match=f"code cell {len(code) - 1}"):
        test_a_stamped_lessons_code_is_the_code_that_made_its_outputs(notebook)
