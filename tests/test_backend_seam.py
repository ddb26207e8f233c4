"""The backend seam holds: outside wd_teach/backends/, no code compares a backend's name.

The store, launcher, wrapper, sampler, resetter, trainer, benchmarks and exercises ask the
backend object (`backend.reads_cuda_c`, `backend.runs_kernels`, ...) instead, so a new
backend is a new file in wd_teach/backends/ and a line in its list, nothing else."""

import ast
from pathlib import Path

import pytest

from wd_teach import backends

ROOT = Path(__file__).resolve().parents[1]
NAMES = {b.name for b in backends.ALL}
CONSTANTS = {b.name.upper() for b in backends.ALL}  # PYCUDA, NUMBA, NUMPY
SEAM = ROOT / "wd_teach" / "backends"


def names_a_backend(node: ast.AST) -> bool:
    if isinstance(node, ast.Constant):
        return node.value in NAMES
    if isinstance(node, ast.Name | ast.Attribute):
        return (node.id if isinstance(node, ast.Name) else node.attr) in CONSTANTS
    if isinstance(node, ast.Tuple | ast.List | ast.Set):
        return any(names_a_backend(e) for e in node.elts)
    return False


def comparisons_with_a_name(tree: ast.AST):
    """(line, text) of each ==, !=, is, is not with a backend's name on either side, and each
    `x in ("numba", ...)` against a literal holding one."""
    for node in ast.walk(tree):
        if not isinstance(node, ast.Compare):
            continue
        sides = [node.left, *node.comparators]
        for op, left, right in zip(node.ops, sides[:-1], sides[1:], strict=True):
            if isinstance(op, ast.Eq | ast.NotEq | ast.Is | ast.IsNot):
                hit = names_a_backend(left) or names_a_backend(right)
            elif isinstance(op, ast.In | ast.NotIn):
                hit = isinstance(right, ast.Tuple | ast.List | ast.Set) and names_a_backend(right)
            else:
                hit = False
            if hit:
                yield node.lineno, ast.unparse(node)


def sources():
    for folder in ("wd_teach", "envs", "bench", "scripts"):
        for path in sorted((ROOT / folder).rglob("*.py")):
            if SEAM not in path.parents:
                yield path


@pytest.mark.parametrize("path", list(sources()), ids=lambda p: str(p.relative_to(ROOT)))
def test_no_backend_name_is_compared_outside_the_seam(path):
    found = list(comparisons_with_a_name(ast.parse(path.read_text(), str(path))))
    assert not found, (f"{path.relative_to(ROOT)} compares a backend's name: " + "; ".join(
        f"line {line}: {text}" for line, text in found) + ". Ask the backend object instead "
        "(wd_teach/backends/base.py lists what it answers).")


def test_the_check_finds_a_comparison():
    """The scan itself is not blind: each kind of comparison it looks for is found."""
    for text in ('backend == "numba"', '"pycuda" != b', "b is NUMPY",
                 'b in ("pycuda", "numba")', "x == backends.NUMPY"):
        assert list(comparisons_with_a_name(ast.parse(text))), text
    for text in ('"numba" in sys.modules', 'b.reads_cuda_c', 'kind == "tanh"'):
        assert not list(comparisons_with_a_name(ast.parse(text))), text
