"""Every algorithm states what it can do in one record and shares the Learner base: the
trainer reads CAPABILITIES and nothing else about a module."""

import copy
import dataclasses

import pytest
import torch

from wd_teach.train.algorithms import ALGORITHMS
from wd_teach.train.algorithms.base import Capabilities, LearnerBase
from wd_teach.train.trainer import Trainer

RUNS = {"a2c": ("tag_grid", ["env.num_envs=2", "trainer.steps=4", "env.params.num_taggers=1",
                             "env.params.num_runners=2", "env.params.num_nearest=2"]),
        "ppo": ("cartpole", ["env.num_envs=4", "trainer.steps=8",
                             "algorithm.num_minibatches=2"]),
        "ddpg": ("pendulum", ["env.num_envs=4", "trainer.steps=4",
                              "algorithm.replay_size=64", "algorithm.batch_size=8",
                              "algorithm.learning_starts=0"])}


@pytest.mark.parametrize("name", ALGORITHMS)
def test_each_algorithm_says_what_it_can_do_in_one_record(name):
    module = ALGORITHMS[name]
    can = module.CAPABILITIES
    assert isinstance(can, Capabilities) and can.policy in ("stochastic", "deterministic")
    assert issubclass(module.Learner, LearnerBase)
    fields = {f.name for f in dataclasses.fields(module.Config)}
    assert can.exploration_noise == ({"noise_theta", "noise_sigma"} <= fields)
    assert callable(module.check) and callable(module.check_ranges)


@pytest.mark.parametrize("name", ALGORITHMS)
def test_a_learners_state_goes_back_exactly(name):
    env, sets = RUNS[name]
    trainer = Trainer(env, gpu=False, sets=[*sets, f"algorithm.name={name}"])
    trainer.train(2, progress=False)
    learner = trainer.learners[sorted(trainer.learners)[0]]
    saved = copy.deepcopy(learner.state_dict())  # state dicts hold the live tensors
    assert set(saved) >= {"policy", *learner.optimizer_names}
    before = [p.detach().clone() for p in learner.policy.parameters()]
    trainer.train(1, progress=False)
    learner.load_state_dict(saved)
    for got, want in zip(learner.policy.parameters(), before, strict=True):
        assert torch.equal(got, want)
