"""The packages the wheel carries, found from the folders (pyproject.toml holds the rest).

envs/ ships as `wd_teach_envs`: a bare `envs` would clash with the PyPI package of that
name, and pyproject's [tool.setuptools.packages.find] finds packages by their folder names
only. So every folder of envs/ with an __init__.py becomes wd_teach_envs.<folder> here: a
new env folder ships, in a wheel and in an editable install, without an edit anywhere.
"""

from setuptools import find_packages, setup

setup(packages=[*find_packages(include=["wd_teach", "wd_teach.*"]),
                "wd_teach_envs", *(f"wd_teach_envs.{name}" for name in find_packages("envs"))])
