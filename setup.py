"""The packages the wheel carries, found from the folders (pyproject.toml holds the rest).

envs/ ships as `wd_teach_envs`: a bare `envs` would clash with the PyPI package of that
name, and pyproject's [tool.setuptools.packages.find] finds packages by their folder names
only. So every folder of envs/ becomes wd_teach_envs.<folder> here: a new env folder ships,
in a wheel and in an editable install, without an edit anywhere.

Every folder is a package, an __init__.py or not (namespace discovery): a folder that holds
only data, such as wd_teach/cuda/ (headers), is then listed like any other, and its files
ship by pyproject's package-data, rather than being picked up from a folder setuptools was
not told about (which it warns of, and may stop doing).
"""

import warnings

from setuptools import find_namespace_packages, setup
from setuptools.warnings import InformationOnly

# An editable install maps wd_teach_envs to envs/, which only an import hook can do; with one,
# setuptools adds a note (its category says: information only) that a folder in the working
# directory named like a package may shadow it. Here such a folder is the package's own
# source (wd_teach/), or envs/, which is not importable as wd_teach_envs: nothing to act on.
warnings.filterwarnings("ignore", message="Editable installation", category=InformationOnly)

#: Python's byte-code caches are folders too; they are not packages.
NOT_PACKAGES = ["__pycache__", "*.__pycache__"]


def packages_in(folder: str, name: str) -> list[str]:
    """`name` and every folder below `folder` as `name.sub.folder`."""
    return [name, *(f"{name}.{p}" for p in find_namespace_packages(folder, exclude=NOT_PACKAGES))]


setup(packages=[*packages_in("wd_teach", "wd_teach"), *packages_in("envs", "wd_teach_envs")])
