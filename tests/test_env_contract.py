"""What an env says about itself, with empty defaults: roles, episode metrics, frames, how it
scales its agents, whether it needs one block per environment. The generic layers read only
these, so they name no env."""

import re
from pathlib import Path

import pytest

from wd_teach.env.registry import find_env, shipped_envs
from wd_teach.errors import EnvError
from wd_teach_envs.cartpole import CartPole
from wd_teach_envs.tag_grid import TagGrid

GENERIC = ["train/trainer.py", "train/rollout.py", "train/metrics.py", "train/report.py",
           "scale/bench.py"]
WD_TEACH = Path(__file__).resolve().parents[1] / "wd_teach"


def test_an_env_says_nothing_special_by_default():
    env = CartPole()
    assert env.agent_roles() == {} and env.episode_metrics() == {}
    assert env.frame_arrays() == ["x", "x_dot", "theta", "theta_dot"]
    assert env.params_for_agents(1) == {} and not env.one_block_per_env
    with pytest.raises(EnvError, match="does not change its number of agents"):
        env.params_for_agents(5)


def test_tag_names_its_roles_metric_and_frames():
    env = TagGrid(num_taggers=2, num_runners=3, num_nearest=2)
    assert env.agent_roles() == {"taggers": [0, 1], "runners": [2, 3, 4]}
    assert list(env.episode_metrics()) == ["tags"]
    assert env.frame_arrays() == ["loc_x", "loc_y", "in_game"]


@pytest.mark.parametrize("module", GENERIC)
def test_the_generic_layers_name_no_env(module):
    text = (WD_TEACH / module).read_text().lower()
    names = [*shipped_envs(), "tag", "tagger", "runner", "cart", "pendulum"]
    found = [n for n in names if re.search(rf"\b{re.escape(n)}s?\b", text)]
    assert found == [], f"{module} names {found}: an env should say it (wd_teach/env/__init__.py)"


def test_every_shipped_env_answers_the_contract():
    for name in shipped_envs():
        env = find_env(name).env_class()
        assert set(env.frame_arrays()) <= set(env.full_state(1))
        for agents in env.agent_roles().values():
            assert all(0 <= a < env.num_agents for a in agents)
        assert env.params_for_agents(env.num_agents) == {}


def test_include_folders_come_from_the_sources_given_as_files():
    """PyCUDA searches an env's folder and its shared kernels' for #includes; an env made
    in a notebook gives its CUDA C as text and has no folder, which is no error."""
    from wd_teach.exercises.lesson_05 import ParkingLine
    from wd_teach_envs.tag_continuous import TagContinuous

    tag = TagContinuous()
    assert tag.include_dirs() == [find_env("tag_continuous").folder.parent / "_tag",
                                  tag.folder]
    notebook_env = ParkingLine(cuda_c_source='extern "C" __global__ void parking_step() {}')
    assert notebook_env.include_dirs() == []
