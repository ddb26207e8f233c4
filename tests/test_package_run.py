"""The program compute-sanitizer watches on a GPU (wd_teach.fundamentals.package_run), run on
Numba's simulator here: every env is stepped through two episodes, the sampler draws its
actions, finished envs are reset, and the command says so for each env."""

import subprocess
import sys

from wd_teach.fundamentals import package_run


def test_every_env_is_stepped_through_two_episodes_with_sampled_actions_and_resets():
    steps = package_run.run("numba", num_envs=2)
    assert steps == {name: 2 * params["episode_length"]
                     for name, params in package_run.ENVS.items()}


def test_every_env_has_actions_the_sampler_draws():
    from wd_teach.env.registry import find_env

    for name, params in package_run.ENVS.items():
        space = find_env(name).env_class(**params).action_space
        assert package_run.heads_of(space), name


def test_the_command_names_each_env_it_stepped():
    done = subprocess.run([sys.executable, "-m", package_run.__name__, "--backend", "numba",
                           "--envs", "1"],
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    for name in package_run.ENVS:
        assert f"stepped {name} 12 times on numba" in done.stdout


def test_heads_of_reads_the_spaces_the_sampler_can_draw_for():
    from gymnasium import spaces

    assert package_run.heads_of(spaces.Discrete(4)) == [4]
    assert package_run.heads_of(spaces.MultiDiscrete([5, 7])) == [5, 7]
    assert package_run.heads_of(spaces.Box(-1, 1, (2,))) is None
