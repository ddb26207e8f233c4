"""Every notebook runs top to bottom in a fresh kernel, and then again in the same kernel;
its first code cell is short, and it imports only public names.

nbval (run by scripts/test.sh) executes each notebook once; this test executes its code
cells twice in one kernel, which is what a learner does who presses "Run all" again.
"""

import ast
import re
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

NOTEBOOKS = sorted((Path(__file__).resolve().parents[1] / "notebooks").glob("*.ipynb"))


@pytest.mark.slow
@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_notebook_runs_twice_without_restart(path):
    notebook = nbformat.read(path, as_version=4)
    code = [cell for cell in notebook.cells if cell.cell_type == "code"]
    notebook.cells = code + [nbformat.v4.new_code_cell(cell.source) for cell in code]
    NotebookClient(notebook, timeout=600, kernel_name="python3",
                   resources={"metadata": {"path": str(path.parent)}}).execute()
    errors = [out for cell in notebook.cells for out in cell.get("outputs", [])
              if out.get("output_type") == "error"]
    assert errors == []


#: A line that IPython runs as a magic or a shell command, not as Python.
MAGIC = re.compile(r"^(\s*)[!%].*$", re.MULTILINE)


def imported_names(source: str) -> list[str]:
    """Every dotted name a cell imports (modules and the names taken from them); its magic and
    `!` lines are read as `pass`, so the rest parses as Python."""
    tree = ast.parse(MAGIC.sub(r"\1pass", source))
    names = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names += [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            names += [f"{node.module}.{alias.name}" for alias in node.names]
    return names


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_no_notebook_imports_a_private_name(path):
    """A lesson teaches with what a learner may use too: a name with a leading underscore is
    the package's own business, free to change. Give what a lesson needs a public home."""
    notebook = nbformat.read(path, as_version=4)
    private = [name for cell in notebook.cells if cell.cell_type == "code"
               for name in imported_names(cell.source)
               if any(part.startswith("_") for part in name.split("."))]
    assert private == [], f"{path.name} imports private names"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_the_first_code_cell_is_at_most_five_lines(path):
    """The first code a learner meets is the Colab set-up, kept short (its work is in
    wd_teach.lessons.colab); tests/test_colab.py checks that it is the generated one."""
    notebook = nbformat.read(path, as_version=4)
    first = next(cell for cell in notebook.cells if cell.cell_type == "code")
    assert len(first.source.splitlines()) <= 5, first.source


def test_private_imports_are_found_behind_magics():
    cell = "%matplotlib inline\nif True:\n    !ls\nfrom wd_teach_envs._tag import render\n"
    assert imported_names(cell) == ["wd_teach_envs._tag.render"]


def shown_checks(source_cells: list[str]) -> list[tuple[str, str]]:
    """(module, name) of every checker whose result a cell shows: its last line is a bare
    `check_...(...)` call, as in an exercise cell before it is solved."""
    imported, shown = {}, []
    for source in source_cells:
        tree = ast.parse(MAGIC.sub(r"\1pass", source))
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom):
                imported.update({alias.asname or alias.name: node.module for alias in node.names})
        last = tree.body[-1] if tree.body else None
        if (isinstance(last, ast.Expr) and isinstance(last.value, ast.Call)
                and isinstance(last.value.func, ast.Name)
                and last.value.func.id.startswith("check")):
            shown.append((imported.get(last.value.func.id), last.value.func.id))
    return shown


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_an_unsolved_exercise_shows_words_not_a_bare_false(path):
    """A cell that ends in a checker's call shows what it returns: a Verdict, whose repr
    says what is right and what is not yet, where a bool would show a bare `False`."""
    import importlib

    from wd_teach.exercises.verdict import Verdict

    notebook = nbformat.read(path, as_version=4)
    for module, name in shown_checks([c.source for c in notebook.cells
                                      if c.cell_type == "code"]):
        assert module and module.startswith("wd_teach.exercises"), f"{path.name}: {name}"
        check = getattr(importlib.import_module(module), name)
        assert check.__annotations__.get("return") in (Verdict, "Verdict"), (
            f"{path.name}: {module}.{name} does not return a Verdict")
