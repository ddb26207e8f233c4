"""Nothing imports upward: each layer of wd_teach imports only the layers below it.

The layers follow the lessons: the base floor (01 data, 02 launch, the machine, the shared
helpers, the random numbers the sampler and envs share); the notebooks' plumbing (lessons/:
sizes, pictures, code shown by name; it imports only the base, and the benchmarks take
their sizes from it); 03 sampler; 04 reset; 05/06 env; 07/08 train; 09 scale; and at the
top what uses them all: the exercises' checkers, the command line, the adapters to other
libraries. Every import counts, also one inside a function (a lazy import still runs
upward when it runs).

wd_teach/fast/ (the fast floor) is left out here: who may import it is checked where the
switch between the floors is tested.
"""

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "wd_teach"

#: Bottom up. A module or folder right below wd_teach/ names its layer.
LAYERS = [
    ("base", {"_simulator", "_watch", "errors", "device", "data", "launch", "cuda_c", "numba_index",
              "floors", "files", "ranges", "timing", "backends", "cuda", "rng",
              "seat_memory"}),
    ("lessons", {"lessons"}),
    ("sampler", {"sampler"}),
    ("reset", {"reset"}),
    ("env", {"env"}),
    ("train", {"train"}),
    ("scale", {"scale", "fundamentals"}),  # lesson 10 measures the GPU, after lesson 09
    ("top", {"exercises", "cli", "__main__", "interop", "room",
             # the old paths of lessons/'s modules, kept for older code: nothing uses them
             "colab", "show", "pictures", "sizes", "demo"}),
]
LEVEL = {unit: level for level, (_, units) in enumerate(LAYERS) for unit in units}
NAME = {level: name for level, (name, _) in enumerate(LAYERS)}
SKIPPED = {"fast"}
#: `import wd_teach` (the package itself) hands out the layers up to reset (DataStore ...
#: Sampler, Resetter); the Trainer only lazily, on first use.
ROOT_LEVEL = LEVEL["reset"]


def unit_of(path: Path) -> str:
    parts = path.relative_to(PACKAGE).with_suffix("").parts
    return parts[0]


def imported(path: Path):
    """(line, dotted module) for every wd_teach import in the file, relative ones resolved;
    `from wd_teach import name` names the submodule where `name` is one."""
    package = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    if path.name != "__init__.py":
        package = package[:-1]
    elif package[-1] == "__init__":
        package = package[:-1]
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield node.lineno, alias.name
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                base = ".".join(package[: len(package) - node.level + 1] + ([base] if base else []))
            for alias in node.names:
                yield node.lineno, (f"{base}.{alias.name}" if _is_module(f"{base}.{alias.name}")
                                    else base)


def _is_module(dotted: str) -> bool:
    path = PACKAGE.parent.joinpath(*dotted.split("."))
    return path.with_suffix(".py").is_file() or path.is_dir()


def level_of(dotted: str) -> int | None:
    parts = dotted.split(".")
    if parts[0] != "wd_teach":
        return None
    if len(parts) == 1:
        return ROOT_LEVEL
    return None if parts[1] in SKIPPED else LEVEL[parts[1]]


MODULES = sorted(p for p in PACKAGE.rglob("*.py") if unit_of(p) not in SKIPPED
                 and p != PACKAGE / "__init__.py")


def test_every_folder_and_module_has_a_layer():
    units = {unit_of(p) for p in MODULES}
    assert units <= set(LEVEL), f"give these a layer in LAYERS: {sorted(units - set(LEVEL))}"


@pytest.mark.parametrize("path", MODULES, ids=lambda p: str(p.relative_to(PACKAGE)))
def test_nothing_imports_a_layer_above_its_own(path):
    mine = LEVEL[unit_of(path)]
    upward = [f"line {line}: {module} ({NAME[level_of(module)]})"
              for line, module in imported(path)
              if level_of(module) is not None and level_of(module) > mine]
    assert not upward, (f"{path.relative_to(PACKAGE)} is in the {NAME[mine]} layer and imports "
                        f"from above it: {'; '.join(upward)}. Move what it needs down, or "
                        "the module up.")
