"""What a notebook shows: the package's own code, cut by name, and what stands in for a
PyCUDA cell that cannot run.

Code by name. `cuda_function(source, "sample_actions")` is the text of one CUDA C function
(a `__global__` kernel or a `__device__` helper, with the comment just above it), and
`python_function(rollout.Rollout._steps)` the text of one Python function or method, and
`python_lines(a2c.loss, "policy_loss =")` the lines of one that begin so (the code beside the
line of math it computes). A lesson that shows code this way shows what the package runs
today, and an edited comment or a moved line cannot cut it in the wrong place; a renamed
function is a clear error naming the functions that are there (tests/test_shown_code.py
finds every such call in the notebooks).

A lesson keeps its PyCUDA cells on every machine. Without a GPU (or without PyCUDA) such a
cell calls `pycuda_missing(source)`: it says plainly why the cell cannot run, shows the CUDA C
it would have compiled, and, when nvcc is here, the start of the PTX that nvcc makes of it,
so the learner still sees what the GPU would be given.
"""

from __future__ import annotations

import inspect
import os
import re
import textwrap
from pathlib import Path

from wd_teach import backends, cuda_c
from wd_teach.device import PYCUDA_INSTALL, discover, nvcc_path
from wd_teach.errors import CompileError, ShowError

#: A comment, a string or a character literal of C, or a preprocessor line (with its
#: continuations): the places where a brace is not code.
_NOT_CODE = re.compile(r'//[^\n]*|/\*.*?\*/|"(?:\\.|[^"\\\n])*"|\'(?:\\.|[^\'\\\n])*\'|'
                       r"^[ \t]*#(?:\\\n|[^\n])*", re.S | re.M)
#: The name a function definition gives: the word before its parameter list (a word in
#: double underscores before a "(" is an attribute, `__launch_bounds__(256)`, not a name).
_DEFINED_NAME = re.compile(r"\b(?!__\w+__\s*\()(\w+)\s*\(")


def pycuda_here() -> bool:
    """True when PyCUDA kernels can run on this machine (a GPU, and PyCUDA installed)."""
    return backends.PYCUDA in discover().backends


def ptx_head(source, lines: int = 30, include_dirs=()) -> str:
    """The first `lines` lines of the PTX that nvcc makes of `source` (CUDA C text or a .cu
    path, whose folder is searched for its #includes; needs nvcc, no GPU)."""
    return "\n".join(cuda_c.ptx(source, extra_include_dirs=include_dirs).splitlines()[:lines])


def pycuda_missing(source=None, ptx_lines: int = 30, include_dirs=()) -> None:
    """Say why PyCUDA cannot run here; show `source` (CUDA C text or a .cu path) and the
    start of its PTX instead. `include_dirs`: folders its #includes are found in besides
    wd_teach's own (an env's: `env.include_dirs()`)."""
    if not discover().has_gpu:
        print("PyCUDA runs CUDA C on an NVIDIA GPU, and this machine has none, so this cell "
              "does not run it here.")
    else:
        print(f"PyCUDA is not installed, so this cell does not run. {PYCUDA_INSTALL}.")
    if source is None:
        return
    print("\nThe CUDA C it would compile:\n")
    print(cuda_c.read_source(source).strip("\n"))
    if nvcc_path() is None:
        print("\n(nvcc is not on this machine either, so there is no PTX to show.)")
        return
    try:
        head = ptx_head(source, ptx_lines, include_dirs)
    except CompileError as err:
        print(f"\n{err}")
        return
    print(f"\nThe first {ptx_lines} lines of the PTX that nvcc makes of it (no GPU needed):\n")
    print(head)


def cuda_function(source, name: str) -> str:
    """The text of the CUDA C function `name` (a `__global__` kernel or a `__device__`
    function, its `template <...>` line and the comment block just above it included).

    `source` is CUDA C text, the path of a .cu or .cuh file, or a list of either (searched
    in order: `env.cuda_sources()` is one). Braces inside comments, strings and preprocessor
    lines are not counted. An overloaded name gives every definition, in order."""
    sources = list(source) if isinstance(source, (list, tuple)) else [source]
    found, names = [], []
    for one in sources:
        text, label = _read_cuda(one)
        for defined, start, end in _cuda_definitions(text):
            names.append(defined)
            if defined == name:
                found.append(text[start:end])
    if not found:
        where = ", ".join(_read_cuda(one)[1] for one in sources)
        raise ShowError(f"no CUDA C function {name!r} in {where}. The __global__ and "
                        f"__device__ functions there: {', '.join(names) or 'none'}. Check the "
                        "spelling, or pass the source that defines it.")
    return "\n\n".join(found)


def python_function(obj, name: str | None = None) -> str:
    """The source of a Python function or method, dedented: `inspect.getsource(obj)`.

    A Numba kernel or device function gives its Python function (`py_func`).
    `python_function(owner, "name")` looks `name` up in a module or class first, and says
    which functions are there when it is not."""
    if name is not None:
        if not hasattr(obj, name):
            raise ShowError(f"{_label(obj)} has no {name!r}. Its functions: "
                            f"{', '.join(_functions_of(obj)) or 'none'}.")
        obj = getattr(obj, name)
    obj = getattr(obj, "py_func", obj)  # a Numba dispatcher: the Python it compiles
    if inspect.ismodule(obj) or inspect.isclass(obj):
        raise ShowError(f"{_label(obj)} is a {'module' if inspect.ismodule(obj) else 'class'}, "
                        "not a function: pass one of its functions, "
                        f"{', '.join(_functions_of(obj)) or 'none'}.")
    if not inspect.isroutine(obj):
        raise ShowError(f"{obj!r} is not a function or a method, so it has no source to show.")
    try:
        text = inspect.getsource(obj)
    except (OSError, TypeError) as err:
        raise ShowError(f"no Python source for {_label(obj)} (built in, or compiled): "
                        f"{err}") from err
    return textwrap.dedent(text).rstrip("\n")


def python_lines(obj, *starts: str) -> str:
    """The lines of a Python function that begin (after their indent) with each of `starts`,
    in the order asked, dedented: one line of math in a lesson, and beside it the line of
    the package that computes it. A start that begins no line of the function is a clear
    error that shows the function's lines, so an edited line cannot show the wrong one."""
    if not starts:
        raise ShowError("python_lines needs at least one start of a line, e.g. "
                        "python_lines(a2c.loss, \"policy_loss =\").")
    lines = python_function(obj).splitlines()
    shown = []
    for start in starts:
        found = [line.strip() for line in lines if line.strip().startswith(start)]
        if not found:
            raise ShowError(f"no line of {_label(getattr(obj, 'py_func', obj))} begins with "
                            f"{start!r}. Its lines:\n" + "\n".join(lines))
        shown += found
    return "\n".join(shown)


def _read_cuda(source) -> tuple[str, str]:
    """(text, how to name it in a message) from CUDA C text or a .cu/.cuh path."""
    if isinstance(source, os.PathLike) or (isinstance(source, str) and "\n" not in source
                                            and source.endswith((".cu", ".cuh"))):
        path = Path(source)
        if not path.is_file():
            raise ShowError(f"no CUDA C file at {path}. Pass the path of a .cu or .cuh file, "
                            "or the source text itself.")
        return path.read_text(), path.name
    if not isinstance(source, str):
        raise ShowError(f"CUDA C source must be text or a .cu/.cuh path, got "
                        f"{type(source).__name__}.")
    return source, "the CUDA C text given"


def _cuda_definitions(text: str):
    """(name, start, end) of every top-level __global__ or __device__ function definition,
    start at its leading comment block, end after its closing brace."""
    code = _NOT_CODE.sub(lambda m: re.sub(r"[^\n]", " ", m.group()), text)  # same offsets
    depth, item_start, body_start = 0, 0, 0
    for at, char in enumerate(code):
        if char == "{":
            if depth == 0:
                body_start = at
            depth += 1
        elif char == "}" and depth > 0:
            depth -= 1
            if depth == 0:
                head = code[item_start:body_start]
                defined = _DEFINED_NAME.search(head)
                if defined and re.search(r"\b__(global|device)__\b", head) \
                        and "=" not in head[:defined.start()]:
                    start = item_start + len(head) - len(head.lstrip())
                    yield defined.group(1), _comment_start(text, start), at + 1
                item_start = at + 1
        elif char == ";" and depth == 0:
            item_start = at + 1


def _comment_start(text: str, start: int) -> int:
    """Where the comment lines just above offset `start` begin (// lines, /* blocks */), up
    to a blank line or code."""
    line_start = text.rfind("\n", 0, start) + 1
    while line_start > 0:
        above = text.rfind("\n", 0, line_start - 1) + 1
        line = text[above:line_start - 1].strip()
        if line.endswith("*/"):
            opening = text.rfind("/*", 0, line_start)
            above = text.rfind("\n", 0, opening) + 1
            if text[above:opening].strip():
                break  # code before the comment on its first line
        elif not line.startswith("//"):
            break
        line_start = above
    return line_start


def _label(obj) -> str:
    return getattr(obj, "__qualname__", None) or getattr(obj, "__name__", None) or repr(obj)


def _functions_of(owner) -> list[str]:
    """The names of the functions defined in a module or class (not imported into it)."""
    if inspect.ismodule(owner):
        functions = {name: getattr(value, "py_func", value) for name, value in vars(owner).items()}
        return [name for name, value in functions.items()
                if inspect.isfunction(value) and value.__module__ == owner.__name__]
    return [name for name, value in vars(owner).items()
            if inspect.isfunction(value) or isinstance(value, (staticmethod, classmethod))]
