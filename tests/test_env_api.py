"""The env author's API is wd_teach.env, declared in one place (its `__all__`).

An env folder (envs/, the exercises' envs, a learner's own) takes everything it needs from
wd_teach through `from wd_teach.env import ...`; these tests hold the shipped folders to
that, so what an env author relies on is one list that stays stable.
"""

import ast
import subprocess
import sys
from pathlib import Path

import pytest

import wd_teach.env
from wd_teach import numba_index
from wd_teach.cuda_c import INCLUDE_DIR
from wd_teach.launch import MAX_THREADS_PER_BLOCK

ROOT = Path(__file__).resolve().parents[1]
EXERCISE_ENVS = [p.parent for p in (ROOT / "wd_teach" / "exercises").glob("*/env.py")]
ENV_FILES = sorted([*(ROOT / "envs").rglob("*.py"),
                    *(f for folder in EXERCISE_ENVS for f in folder.rglob("*.py"))])


def test_every_name_of_the_api_is_there():
    missing = [name for name in wd_teach.env.__all__ if not hasattr(wd_teach.env, name)]
    assert not missing


def test_the_api_hands_out_the_objects_of_their_home_modules():
    """The old homes (wd_teach.numba_index, ...) stay real modules: the same objects."""
    from wd_teach._simulator import simulator_on

    assert wd_teach.env.agent_id is numba_index.agent_id
    assert wd_teach.env.env_id is numba_index.env_id
    assert wd_teach.env.slot is numba_index.slot
    assert wd_teach.env.simulator_on is simulator_on
    assert wd_teach.env.MAX_THREADS_PER_BLOCK == MAX_THREADS_PER_BLOCK
    assert (wd_teach.env.CUDA_INCLUDE_DIR / "wd_teach.cuh").is_file()
    assert wd_teach.env.CUDA_INCLUDE_DIR == INCLUDE_DIR


def test_an_unknown_name_is_an_attribute_error():
    with pytest.raises(AttributeError, match="no attribute 'agent_idx'"):
        wd_teach.env.agent_idx  # noqa: B018


def test_importing_the_api_does_not_import_numba():
    code = "import sys, wd_teach.env; print('numba' in sys.modules)"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "False"


def wd_teach_imports(path: Path):
    """(line, module, names) of every import of wd_teach (not wd_teach_envs) in a file."""
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            if node.module.split(".")[0] == "wd_teach":
                yield node.lineno, node.module, [a.name for a in node.names]
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] == "wd_teach":
                    yield node.lineno, alias.name, []


def test_the_exercises_have_env_folders_to_check():
    assert EXERCISE_ENVS, "no env.py under wd_teach/exercises/: update EXERCISE_ENVS"


@pytest.mark.parametrize("path", ENV_FILES, ids=lambda p: str(p.relative_to(ROOT)))
def test_env_folders_import_only_the_api(path):
    wrong = [f"line {line}: {module} {names or ''}"
             for line, module, names in wd_teach_imports(path)
             if module != "wd_teach.env" or not set(names) <= set(wd_teach.env.__all__)]
    assert not wrong, (f"{path.relative_to(ROOT)} takes from wd_teach what the env API does "
                       f"not offer: {'; '.join(wrong)}. Import it from wd_teach.env (and add "
                       "it to wd_teach.env.__all__ if an env really needs it).")
