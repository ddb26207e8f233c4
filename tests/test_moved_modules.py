"""The notebook plumbing moved to wd_teach/lessons/; the old paths still work and say so."""

import importlib
import subprocess
import sys

import pytest

MOVED = ["colab", "show", "pictures", "sizes", "demo"]


@pytest.mark.parametrize("name", MOVED)
def test_the_old_path_warns_and_gives_the_moved_module(name, monkeypatch):
    new = importlib.import_module(f"wd_teach.lessons.{name}")
    monkeypatch.delitem(sys.modules, f"wd_teach.{name}", raising=False)
    with pytest.warns(DeprecationWarning, match=f"wd_teach.lessons.{name}"):
        old = importlib.import_module(f"wd_teach.{name}")
    assert old is new
    public = [n for n in vars(new) if not n.startswith("__")]
    assert public and all(getattr(old, n) is getattr(new, n) for n in public)


@pytest.mark.filterwarnings("ignore::DeprecationWarning")
def test_names_from_the_old_paths_are_the_moved_objects():
    from wd_teach.demo import move as old_move
    from wd_teach.lessons.demo import move
    from wd_teach.lessons.sizes import lesson_sizes
    from wd_teach.sizes import lesson_sizes as old_lesson_sizes

    assert old_move is move and old_lesson_sizes is lesson_sizes


def test_the_top_level_names_stay():
    import wd_teach
    from wd_teach.lessons.sizes import lesson_sizes

    assert wd_teach.lesson_sizes is lesson_sizes


def test_the_old_colab_command_still_runs():
    """Older notebooks' install cell runs `python -m wd_teach.colab`: it must still work."""
    code = ("import runpy, sys; from wd_teach.lessons import colab;"
            " colab.setup_colab = lambda: print('set up') or 0;"
            " runpy.run_module('wd_teach.colab', run_name='__main__')")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr
    assert "set up" in done.stdout
