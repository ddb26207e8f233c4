"""Notebooks show the package's code by name, and say what they show.

Every `cuda_function(source, "name")`, `python_function(obj)` and `python_lines(obj, ...)`
call in a notebook's code cells is found with ast and evaluated as the notebook would, in a
namespace made of the notebook's own imports: the function (and the lines) must be there. A
CUDA source that is one of the notebook's own variables (`game.cuda_sources()`) is looked for
in every CUDA C file of the package and the envs instead. The nearest markdown cell above must
name the function shown, in backticks (`sample_actions`, `ppo.loss`), so the text says what
the code is. And no code cell cuts a file between two comment strings any more.
"""

import ast
import json
import re
from pathlib import Path

import pytest

from wd_teach.errors import ShowError
from wd_teach.lessons.show import cuda_function

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))
#: Where a CUDA name is looked for when its source is a variable of the notebook.
CUDA_FILES = sorted(path for folder in ("wd_teach", "envs") for path in (ROOT / folder).rglob("*")
                    if path.suffix in (".cu", ".cuh"))
#: A slice of file text between two markers: `text.index("// The ...")`, `.index('extern "C"`.
CUT_BETWEEN_STRINGS = re.compile(r"""\.index\(\s*['"](//|/\*|#include|extern|__global__)""")


def _python(cell_source: str) -> str:
    """A code cell with its IPython magics and shell lines read as `pass` (at their indent, so
    an `if` around a `!` line still has a body), so that ast can parse it."""
    return "\n".join(line[:len(line) - len(line.lstrip())] + "pass"
                     if line.lstrip().startswith(("%", "!")) else line
                     for line in cell_source.splitlines())


def _code_cells(notebook: dict):
    """(index, source, the nearest markdown cell above) of every code cell."""
    markdown = ""
    for index, cell in enumerate(notebook["cells"]):
        source = "".join(cell["source"])
        if cell["cell_type"] == "markdown":
            markdown = source
        elif cell["cell_type"] == "code":
            yield index, source, markdown


def _imports(notebook: dict) -> dict:
    """A namespace holding what the notebook's top-level import statements import."""
    namespace: dict = {}
    for _, source, _ in _code_cells(notebook):
        for node in ast.parse(_python(source)).body:
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                exec(compile(ast.Module([node], []), "<notebook imports>", "exec"), namespace)
    return namespace


def shown_calls(notebook: dict):
    """(cell index, the call's ast node, the markdown above) of every call that shows code."""
    for index, source, markdown in _code_cells(notebook):
        for node in ast.walk(ast.parse(_python(source))):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) \
                    and node.func.id in ("cuda_function", "python_function", "python_lines"):
                yield index, node, markdown


def _shown_name(call: ast.Call, namespace: dict) -> str:
    """The name of the function a call shows, after finding it (a ShowError if it is not
    there). Raises ValueError for a call the test cannot check."""
    def value(node):
        return eval(compile(ast.Expression(node), "<notebook>", "eval"), namespace)

    if call.func.id == "cuda_function":
        source, name = call.args
        if not (isinstance(name, ast.Constant) and isinstance(name.value, str)):
            raise ValueError("name the CUDA C function with a string literal")
        try:
            source = value(source)
        except NameError:  # a variable of the notebook: every CUDA C file of the project
            source = CUDA_FILES
        cuda_function(source, name.value)
        return name.value
    try:
        value(call)  # python_function(obj), python_function(owner, "name"), python_lines(...)
        if call.func.id == "python_function" and len(call.args) == 2:
            return call.args[1].value
        shown = value(call.args[0])
    except (NameError, AttributeError) as err:
        raise ValueError(f"show Python code through what the notebook imports ({err})") from err
    return getattr(shown, "py_func", shown).__name__


def problems(notebook: dict) -> list[str]:
    """What is wrong with the code a notebook shows, one line each; [] when nothing is."""
    found = []
    namespace = _imports(notebook)
    for index, call, markdown in shown_calls(notebook):
        where = f"cell {index}, {ast.unparse(call)}"
        try:
            name = _shown_name(call, namespace)
        except (ShowError, ValueError) as err:
            found.append(f"{where}: {err}")
            continue
        if not re.search(rf"`(?:[\w.]+\.)?{re.escape(name)}(?:\(\))?`", markdown):
            found.append(f"{where}: the markdown above does not name `{name}`")
    for index, source, _ in _code_cells(notebook):
        if CUT_BETWEEN_STRINGS.search(source):
            found.append(f"cell {index} cuts code between two strings: show it by name with "
                         "cuda_function or python_function")
    return found


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_every_piece_of_code_a_notebook_shows_is_found_and_named(path):
    assert problems(json.loads(path.read_text(encoding="utf-8"))) == []


@pytest.mark.parametrize("stem, at_least", [("03_sampler", 6), ("04_reset_and_log", 3),
                                            ("06_tag", 4), ("07_training", 6)])
def test_the_lessons_show_their_code_by_name(stem, at_least):
    notebook = json.loads((ROOT / "notebooks" / f"{stem}.ipynb").read_text(encoding="utf-8"))
    assert len(list(shown_calls(notebook))) >= at_least


def _notebook(*cells: tuple[str, str]) -> dict:
    return {"cells": [{"cell_type": kind, "source": [source]} for kind, source in cells]}


IMPORTS = ("code", "from wd_teach.sampler.sampler import CUDA_C_PATH\n"
                   "from wd_teach.train.rollout import Rollout\n"
                   "from wd_teach.train.algorithms import a2c\n"
                   "from wd_teach.lessons.show import cuda_function, python_function, "
                   "python_lines")


def test_a_notebook_that_shows_its_code_right_has_no_problems():
    notebook = _notebook(IMPORTS,
                         ("markdown", "The kernel, `sample_actions`, and `Rollout._steps`:"),
                         ("code", 'print(cuda_function(CUDA_C_PATH, "sample_actions"))\n'
                                  "print(python_function(Rollout._steps))"))
    assert problems(notebook) == []


def test_a_name_that_is_not_there_is_a_problem_that_lists_the_names_there():
    notebook = _notebook(IMPORTS, ("markdown", "The kernel, `no_such_kernel`:"),
                         ("code", 'print(cuda_function(CUDA_C_PATH, "no_such_kernel"))'))
    [problem] = problems(notebook)
    assert "'no_such_kernel'" in problem and "sample_actions, argmax_actions" in problem
    notebook = _notebook(IMPORTS, ("markdown", "The loop, `Rollout._stepz`:"),
                         ("code", "print(python_function(Rollout._stepz))"))
    [problem] = problems(notebook)
    assert "_stepz" in problem


def test_code_that_the_markdown_above_does_not_name_is_a_problem():
    notebook = _notebook(IMPORTS, ("markdown", "The kernel:"),
                         ("code", 'print(cuda_function(CUDA_C_PATH, "sample_actions"))'),
                         ("markdown", "The loop, `Rollout.collect`:"),
                         ("code", "print(python_function(Rollout._steps))"))
    assert problems(notebook) == [
        "cell 2, cuda_function(CUDA_C_PATH, 'sample_actions'): the markdown above does not "
        "name `sample_actions`",
        "cell 4, python_function(Rollout._steps): the markdown above does not name `_steps`"]


def test_a_cut_between_comment_strings_is_a_problem():
    notebook = _notebook(("code", "text = CUDA_C_PATH.read_text()\n"
                                  'print(text[text.index("// The draw"):text.index("// Next")])'))
    [problem] = problems(notebook)
    assert "cuts code between two strings" in problem


def test_lines_shown_must_be_there_and_their_function_named_above():
    notebook = _notebook(IMPORTS, ("markdown", "Its critic's loss, in `a2c.loss`:"),
                         ("code", 'print(python_lines(a2c.loss, "value_loss ="))'))
    assert problems(notebook) == []
    notebook = _notebook(IMPORTS, ("markdown", "Its critic's loss:"),
                         ("code", 'print(python_lines(a2c.loss, "value_los ="))'),
                         ("markdown", "Its critic's loss:"),
                         ("code", 'print(python_lines(a2c.loss, "value_loss ="))'))
    first, second = problems(notebook)
    assert "no line of loss begins with 'value_los ='" in first
    assert second.endswith("the markdown above does not name `loss`")
