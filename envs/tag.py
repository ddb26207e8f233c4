"""What both Tag games share, under a public name for the lessons and for new Tag-like games:
the Python base (`game`), the Numba device functions and catch kernel (`tag_numba`), their
NumPy twins (`tag_reference`) and the drawings of a game (`render`).

They live in envs/_tag/, whose leading underscore tells the env registry that the folder is
not an env of its own (wd_teach.env.registry.shipped_envs skips it); the envs beside it import
from there. Import them from here: `from wd_teach_envs.tag import render`.
"""

from wd_teach_envs._tag import game, render, tag_numba, tag_reference

__all__ = ["game", "render", "tag_numba", "tag_reference"]
