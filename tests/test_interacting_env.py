"""An env whose agents read each other in the same step (tests/data/huddle: a barrier in the
kernel), written as a folder outside the package: it agrees across backends bit for bit,
refuses a launch that would split it over blocks, trains through the API and the command
line, reports its own episode metric, and benchmarks, with no change to the package."""

import shutil
from pathlib import Path

import pytest

import wd_teach
from wd_teach.cli import main
from wd_teach.env.consistency import check_consistency
from wd_teach.env.registry import find_env
from wd_teach.env.wrapper import EnvWrapper
from wd_teach.errors import EnvError
from wd_teach.train.trainer import Trainer

HUDDLE = Path(__file__).parent / "data" / "huddle"
TINY = ["env.num_envs=3", "trainer.steps=8", "algorithm.num_minibatches=2"]


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    """The huddle env copied where a learner would write one: beside their notebook."""
    where = tmp_path_factory.mktemp("my_lessons") / "huddle"
    shutil.copytree(HUDDLE, where, ignore=shutil.ignore_patterns("__pycache__"))
    return where


def test_it_agrees_across_backends_bit_for_bit(folder):
    env = find_env(folder).env_class(num_agents=6, episode_length=4)
    backends = ["numpy", *wd_teach.discover().backends]
    report = check_consistency(env, backends, num_envs=3, steps=6, seed=2)
    assert report.ok, report.table()
    for backend in backends[1:]:
        for array, largest in report.largest[backend].items():
            assert largest.max() == 0, f"{backend} {array}\n{report.table()}"


def test_a_launch_that_splits_an_environment_is_refused(folder):
    env = find_env(folder).env_class(num_agents=8)
    with pytest.raises(EnvError, match="one_block_per_env.*would take 2 blocks"):
        EnvWrapper(env, 2, "numba", max_threads=4)
    EnvWrapper(env, 2, "numba", max_threads=8)  # one block per environment: fine


def test_it_trains_and_reports_its_own_metric(folder):
    trainer = Trainer(str(folder), gpu=False, sets=[*TINY, "env.params.episode_length=4"])
    history = trainer.train(2, progress=False)
    assert trainer.metric_labels == {"spread_per_episode": "spread of the group at the end"}
    spreads = [row["spread_per_episode"] for row in history]
    assert all(0 <= s <= 10 for s in spreads)  # the line is 10 long; episodes ended
    assert "spread" in trainer.summary(history[-1])


def test_it_trains_and_benchmarks_from_the_command_line(folder, tmp_path, capsys):
    sets = [arg for s in TINY for arg in ("--set", s)]
    assert main(["train", str(folder), "--iterations", "2", "--backend", "numpy", "--quiet",
                 "--out", str(tmp_path / "run"), *sets]) == 0
    assert (tmp_path / "run" / "learning_curve.png").is_file()
    assert main(["bench", "env", "--env", str(folder), "--envs", "2", "--backend", "numpy",
                 "--iterations", "1"]) == 0
    assert "env steps/s" in capsys.readouterr().out
