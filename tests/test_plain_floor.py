"""The plain floor stays plain: the modules the lessons show hold no machinery made for speed.

Lessons 02, 07 and 08 open the launcher, the policy, A2C's and PPO's losses and the rollout,
and read them top to bottom. What exists only for speed (Triton kernels, torch.compile, custom
autograd Functions, ctypes launches, caches kept at module level) lives in wd_teach/fast/ and
wd_teach/backends/. Each rule is read from the module's syntax tree, not from its words, and
the rules are tested on small sources that break them, so a rule that can no longer fail is
caught too.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

#: The modules the lessons show, as the learner opens them.
PLAIN = [
    "wd_teach/launch.py",
    "wd_teach/train/policy.py",
    "wd_teach/train/noise.py",
    "wd_teach/train/algorithms/base.py",
    "wd_teach/train/algorithms/common.py",
    "wd_teach/train/algorithms/a2c.py",
    "wd_teach/train/algorithms/ppo.py",
    "wd_teach/train/rollout.py",
]

#: Imports that are speed machinery: the fast floor's own folder among them.
FORBIDDEN_IMPORTS = ("triton", "ctypes", "wd_teach.fast")
CACHE_DECORATORS = {"cache", "lru_cache", "cached_property"}
EMPTY_CONTAINERS = {"dict", "list", "set", "OrderedDict", "defaultdict", "WeakKeyDictionary",
                    "WeakValueDictionary"}


def _name(node: ast.AST) -> str:
    """'torch.autograd.Function' for that attribute chain; '' for anything else."""
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        inner = _name(node.value)
        return f"{inner}.{node.attr}" if inner else ""
    if isinstance(node, ast.Call):
        return _name(node.func)
    return ""


def speed_machinery(source: str) -> list[str]:
    """What in `source` belongs behind the fast door, one line each ([] for a plain module)."""
    tree = ast.parse(source)
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import | ast.ImportFrom):
            names = ([a.name for a in node.names] if isinstance(node, ast.Import)
                     else [node.module or ""])
            for name in names:
                if any(name == f or name.startswith(f + ".") for f in FORBIDDEN_IMPORTS):
                    found.append(f"line {node.lineno}: imports {name}")
        elif isinstance(node, ast.Attribute) and _name(node) == "torch.compile":
            found.append(f"line {node.lineno}: torch.compile")
        elif isinstance(node, ast.ClassDef):
            for base in node.bases:
                if _name(base).endswith("autograd.Function") or _name(base) == "Function":
                    found.append(f"line {node.lineno}: {node.name} is an autograd.Function")
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            for deco in node.decorator_list:
                if _name(deco).split(".")[-1] in CACHE_DECORATORS:
                    found.append(f"line {node.lineno}: {node.name} is cached")
        if isinstance(node, ast.Global):
            found.append(f"line {node.lineno}: global {', '.join(node.names)}")
    for node in tree.body:  # module level: an empty container filled later is a cache
        if isinstance(node, ast.Assign | ast.AnnAssign) and node.value is not None:
            value = node.value
            empty = (isinstance(value, ast.Dict | ast.List | ast.Set) and not (
                value.keys if isinstance(value, ast.Dict) else value.elts)) or (
                isinstance(value, ast.Call) and not value.args and not value.keywords
                and _name(value.func).split(".")[-1] in EMPTY_CONTAINERS)
            if empty:
                found.append(f"line {node.lineno}: an empty container at module level")
    return found


@pytest.mark.parametrize("path", PLAIN)
def test_a_module_the_lessons_show_has_no_speed_machinery(path):
    found = speed_machinery((ROOT / path).read_text())
    assert not found, (f"{path} is on the plain floor, which lessons read; move these behind "
                       f"the fast door (wd_teach/fast/): " + "; ".join(found))


def test_the_policy_module_reads_in_under_250_lines():
    lines = len((ROOT / "wd_teach/train/policy.py").read_text().splitlines())
    assert lines < 250, f"wd_teach/train/policy.py has {lines} lines; the plain policy is < 250"


@pytest.mark.parametrize("source, what", [
    ("import triton\n", "imports triton"),
    ("from ctypes import c_void_p\n", "imports ctypes"),
    ("from wd_teach.fast.policy import CLASSES\n", "imports wd_teach.fast.policy"),
    ("import torch\nstep = torch.compile(lambda x: x)\n", "torch.compile"),
    ("import torch\nclass Relu(torch.autograd.Function):\n    pass\n", "autograd.Function"),
    ("import functools\n@functools.cache\ndef f():\n    return 1\n", "f is cached"),
    ("from functools import lru_cache\n@lru_cache(None)\ndef f():\n    return 1\n", "cached"),
    ("_PREPARED = {}\n", "empty container"),
    ("_SEEN: dict = dict()\n", "empty container"),
    ("def f():\n    global X\n    X = 1\n", "global X"),
])
def test_each_rule_finds_what_it_names(source, what):
    found = speed_machinery(source)
    assert any(what in line for line in found), found


def test_constants_and_plain_code_pass():
    source = ('ACTIVATIONS = {"tanh": 1}\nSIZES = [1, 2]\n'
              "def f(x):\n    cache = {}\n    return cache.get(x)\n")
    assert speed_machinery(source) == []
