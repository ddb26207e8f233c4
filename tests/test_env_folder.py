"""An env folder anywhere trains, benchmarks and checks, with no change to the package: here a
copy of CartPole renamed in a temporary folder, as a learner would make one beside a notebook.
Also: env objects and classes train, a subclass keeps its parent's kernels, and a folder
that is not an env says what it lacks."""

import shutil

import pytest

from wd_teach.cli import main
from wd_teach.env.consistency import check_consistency
from wd_teach.env.registry import ENV_FILES, find_env
from wd_teach.errors import ConfigError, EnvError
from wd_teach.train.trainer import Trainer
from wd_teach_envs.cartpole import CartPole

CARTPOLE = find_env("cartpole").folder
#: A tiny run: a few envs, short rollouts, two iterations.
TINY = ["env.num_envs=4", "trainer.steps=8", "algorithm.num_minibatches=2"]


@pytest.fixture(scope="module")
def my_env(tmp_path_factory):
    """envs/cartpole copied outside the package, its class and kernel renamed."""
    folder = tmp_path_factory.mktemp("notebook_folder") / "my_env"
    folder.mkdir()
    for name in ENV_FILES:
        text = (CARTPOLE / name).read_text()
        text = text.replace("CartPole", "MyCartPole").replace("cartpole_step", "my_cart_step")
        (folder / name).write_text(text)
    return folder


def test_a_folder_outside_the_package_is_found(my_env):
    found = find_env(my_env)
    assert found.env_class.__name__ == "MyCartPole"
    assert found.folder == my_env and found.name == str(my_env.resolve())
    assert find_env(str(my_env)).env_class is found.env_class  # imported once


def test_a_folder_env_agrees_across_backends(my_env):
    env = find_env(my_env).env_class(episode_length=5)
    assert env.step_kernels == ("my_cart_step",)
    report = check_consistency(env, ["numpy", "numba"], num_envs=2, steps=6)
    assert report.ok, report.table()


def test_a_folder_env_trains_through_the_trainer(my_env):
    trainer = Trainer(str(my_env), gpu=False, sets=TINY)
    assert type(trainer.env).__name__ == "MyCartPole"
    trainer.train(2, progress=False)
    assert len(trainer.history) == 2


def test_a_folder_env_trains_and_benchmarks_from_the_command_line(my_env, tmp_path, capsys):
    sets = [arg for s in TINY for arg in ("--set", s)]
    assert main(["train", str(my_env), "--iterations", "2", "--backend", "numpy", "--quiet",
                 "--out", str(tmp_path / "run"), *sets]) == 0
    assert (tmp_path / "run" / "metrics.csv").is_file()
    assert main(["bench", "env", "--env", str(my_env), "--envs", "2", "--backend", "numpy",
                 "--iterations", "1", "--quiet"]) == 0
    assert "env steps/s" in capsys.readouterr().out


def test_env_objects_and_classes_train_with_their_folders_defaults():
    trainer = Trainer(CartPole(episode_length=9), gpu=False, sets=TINY)
    assert trainer.env.episode_length == 9 and trainer.config.env.name == "cartpole"
    assert trainer.config.env.params["episode_length"] == 9
    assert Trainer(CartPole, gpu=False, sets=TINY).config.policies.keys() == {"cart"}


def test_a_subclass_elsewhere_keeps_its_parents_kernels():
    class LongCartPole(CartPole):  # as in a notebook: this file has no step files beside it
        pass

    env = LongCartPole(episode_length=3)
    assert env.folder == CARTPOLE
    assert env.numba_kernels().cartpole_step and env.reference_step()
    trainer = Trainer(env, gpu=False, sets=TINY)
    assert trainer.env is env


def test_a_folder_that_is_not_an_env_says_what_it_lacks(tmp_path):
    (tmp_path / "env.py").write_text("")
    with pytest.raises(EnvError, match="lacks step.cu, step_numba.py, reference.py, config"):
        find_env(tmp_path)
    with pytest.raises(ConfigError, match="is not an env folder"):
        Trainer(str(tmp_path), gpu=False)
    with pytest.raises(EnvError, match="no environment named 'cartpol'.*cartpole"):
        find_env("cartpol")


def test_an_env_folder_copied_with_its_config_needs_no_name_change(tmp_path):
    folder = tmp_path / "copy"
    shutil.copytree(CARTPOLE, folder, ignore=shutil.ignore_patterns("__pycache__"))
    trainer = Trainer(str(folder), gpu=False, sets=TINY)
    assert trainer.config.env.name == str(folder.resolve())  # not config.yaml's 'cartpole'
