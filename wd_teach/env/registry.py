"""Where environments come from: a name or a folder in, the env class and its folder out.

An env is a folder (wd_teach/env/__init__.py says what is in it), and it can live anywhere:

    a folder path     any folder with the env files: in a temp dir, beside a notebook
    a shipped name    each public folder of the `wd_teach_envs` package (envs/ here):
                      cartpole, pendulum, ...; folders whose name starts with _ are shared
                      code, not envs
    an installed name another package's env, declared in its pyproject.toml as an entry
                      point of the group `wd_teach.envs`:
                          [project.entry-points."wd_teach.envs"]
                          my_game = "my_package.my_game.env:MyGame"

Nothing here lists envs by hand: a new folder is found the moment it exists, so adding a
game never edits the package.
"""

from __future__ import annotations

import hashlib
import importlib
import importlib.metadata
import re
import sys
import types
from dataclasses import dataclass
from pathlib import Path

import wd_teach_envs
from wd_teach.env import Env, env_folder
from wd_teach.errors import EnvError

#: The files of an env folder: the class, its three steps, its default training config.
ENV_FILES = ("env.py", "step.cu", "step_numba.py", "reference.py", "config.yaml")
#: Other packages declare their envs as entry points of this group.
ENTRY_POINT_GROUP = "wd_teach.envs"


@dataclass(frozen=True)
class FoundEnv:
    """An env as a config names it: `name` (a shipped or installed name, or the folder's
    absolute path), its class, and the folder that holds its files."""

    name: str
    env_class: type
    folder: Path

    @property
    def config_path(self) -> Path:
        return self.folder / "config.yaml"


def shipped_envs() -> dict[str, Path]:
    """Name -> folder of every env that ships with wd-teach, found by scanning its folders."""
    found = {}
    for root in map(Path, wd_teach_envs.__path__):
        for folder in sorted(root.iterdir()):
            if not folder.name.startswith(("_", ".")) and not missing_files(folder):
                found[folder.name] = folder
    return found


def installed_envs() -> dict[str, importlib.metadata.EntryPoint]:
    """Name -> entry point of every env that other installed packages declare."""
    return {ep.name: ep for ep in importlib.metadata.entry_points(group=ENTRY_POINT_GROUP)}


def known_envs() -> list[str]:
    """Every env name that works without a path: shipped ones first, then installed ones."""
    shipped = list(shipped_envs())
    return shipped + sorted(set(installed_envs()) - set(shipped))


def missing_files(folder: Path) -> list[str]:
    """The env files that `folder` lacks (all of them when it is not a folder)."""
    return [name for name in ENV_FILES if not (folder / name).is_file()]


def is_env(name_or_path) -> bool:
    """Whether `name_or_path` names an env (a known name, or a folder), rather than, say, a
    YAML file of a training config."""
    if isinstance(name_or_path, str) and name_or_path in known_envs():
        return True
    return isinstance(name_or_path, (str, Path)) and Path(name_or_path).is_dir()


def find_env(name_or_path) -> FoundEnv:
    """The env that `name_or_path` names: a folder path, a shipped name or an installed name.
    A folder that is not an env, or a name that is not known, is an EnvError that says what
    is missing."""
    if isinstance(name_or_path, Path) or Path(str(name_or_path)).is_dir():
        return _from_folder(Path(name_or_path))
    name = str(name_or_path)
    shipped = shipped_envs()
    if name in shipped:
        return FoundEnv(name, _env_class(f"wd_teach_envs.{name}.env", shipped[name]),
                        shipped[name])
    installed = installed_envs()
    if name in installed:
        env_class = installed[name].load()
        return FoundEnv(name, env_class, env_folder(env_class))
    raise EnvError(f"no environment named {name!r}: it is not a folder here, and the known "
                   f"ones are {', '.join(known_envs())}. Give a shipped name, or the path of "
                   f"an env folder (one with {', '.join(ENV_FILES)}).")


def find_env_of_class(env_class: type) -> FoundEnv:
    """The env of a class (or of a subclass of one, say in a notebook): its folder, and the
    name a config gives it."""
    folder = env_folder(env_class)
    for name, shipped in shipped_envs().items():
        if shipped.resolve() == folder.resolve():
            return FoundEnv(name, env_class, shipped)
    for name, entry in installed_envs().items():
        if entry.value.split(":")[0] == env_class.__module__:
            return FoundEnv(name, env_class, folder)
    return FoundEnv(str(folder.resolve()), env_class, folder)


def _from_folder(folder: Path) -> FoundEnv:
    """An env folder given by its path. A shipped folder keeps its shipped name, so that the
    same env is never imported twice as two different classes."""
    missing = missing_files(folder)
    if missing:
        what = "is not a folder" if not folder.is_dir() else f"lacks {', '.join(missing)}"
        raise EnvError(f"{folder} is not an env folder: it {what}. An env folder holds "
                       f"{', '.join(ENV_FILES)} (copy envs/cartpole to start one).")
    for name, shipped in shipped_envs().items():
        if shipped.resolve() == folder.resolve():
            return find_env(name)
    package = _import_folder(folder.resolve())
    return FoundEnv(str(folder.resolve()), _env_class(f"{package}.env", folder), folder)


def _import_folder(folder: Path) -> str:
    """Make `folder` importable as a package of its own, once, and return the package's
    name. The name comes from the folder's path, so two folders called my_env in different
    places stay apart, and the same folder always gives the same classes."""
    digest = hashlib.sha1(str(folder).encode()).hexdigest()[:8]
    readable = re.sub(r"\W", "_", folder.name)
    name = f"wd_teach_folder_{readable}_{digest}"
    if name not in sys.modules:
        package = types.ModuleType(name, f"The env folder {folder}.")
        package.__path__ = [str(folder)]
        sys.modules[name] = package
    return name


def _env_class(module_name: str, folder: Path) -> type:
    """The one Env subclass that env.py defines."""
    module = importlib.import_module(module_name)
    classes = [value for value in vars(module).values()
               if isinstance(value, type) and issubclass(value, Env)
               and value.__module__ == module.__name__]
    if len(classes) != 1:
        found = ", ".join(c.__name__ for c in classes) or "none"
        raise EnvError(f"{folder / 'env.py'} must define one subclass of wd_teach.env.Env, the "
                       f"env; it defines {found}.")
    return classes[0]
