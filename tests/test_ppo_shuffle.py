"""PPO's two ways to make minibatches: any samples, or whole trajectories (each agent's
steps of the rollout together). Both split the rollout into equal parts that cover it
once an epoch; with one minibatch they are the same gradient step."""

import pytest
import torch

from wd_teach.errors import ConfigError
from wd_teach.train.algorithms import ppo
from wd_teach.train.algorithms.base import LearnerOptions
from wd_teach.train.policy import CategoricalActorCritic
from wd_teach.train.rollout import Batch
from wd_teach.train.trainer import Trainer

STEPS, ENVS, AGENTS, FEATURES = 6, 4, 3, 5


def batch(seed=0) -> Batch:
    """A rollout whose first feature says which (env, agent) made each sample, and whose
    second says at which step."""
    g = torch.Generator().manual_seed(seed)
    obs = torch.rand(STEPS, ENVS, AGENTS, FEATURES, generator=g)
    who = torch.arange(ENVS * AGENTS, dtype=torch.float32).reshape(ENVS, AGENTS)
    obs[..., 0] = who
    obs[..., 1] = torch.arange(STEPS, dtype=torch.float32)[:, None, None]
    shape = (STEPS, ENVS, AGENTS)
    return Batch(obs=obs, actions=torch.randint(0, 3, (*shape, 1), generator=g),
                 log_probs=-torch.rand(shape, generator=g), values=torch.randn(shape, generator=g),
                 rewards=torch.randn(shape, generator=g),
                 dones=(torch.rand(shape, generator=g) < 0.2).float(),
                 last_values=torch.randn(ENVS, AGENTS, generator=g))


def learner(shuffle: str, **config) -> ppo.Learner:
    torch.manual_seed(0)
    policy = CategoricalActorCritic(FEATURES, [3], [8])
    options = LearnerOptions(lr=1e-3, generator=torch.Generator().manual_seed(1))
    return ppo.Learner(policy, ppo.Config(shuffle=shuffle, **config), options)


def minibatches(learn: ppo.Learner) -> list[torch.Tensor]:
    """The observations of every minibatch one update evaluates, in order."""
    seen = []
    evaluate = learn.policy.evaluate

    def spy(obs, actions):
        seen.append(obs.detach().clone())
        return evaluate(obs, actions)

    learn.policy.evaluate = spy
    learn.update(batch())
    return seen


@pytest.mark.parametrize("shuffle", ppo.SHUFFLES)
def test_each_epoch_covers_every_sample_once_in_equal_minibatches(shuffle):
    seen = minibatches(learner(shuffle, epochs=2, num_minibatches=4))
    assert len(seen) == 2 * 4
    samples = STEPS * ENVS * AGENTS
    for epoch in (seen[:4], seen[4:]):
        assert all(mb.shape == (samples // 4, FEATURES) for mb in epoch)
        drawn = torch.cat(epoch)[:, :2]  # (who, step) of each sample
        assert torch.unique(drawn, dim=0).shape[0] == samples


def test_a_trajectory_minibatch_holds_whole_trajectories_in_step_order():
    for mb in minibatches(learner("trajectories", epochs=2, num_minibatches=4)):
        who, step = mb[:, 0].reshape(-1, STEPS), mb[:, 1].reshape(-1, STEPS)
        assert (who == who[:, :1]).all(), "one agent per row of STEPS samples"
        assert (step == torch.arange(STEPS, dtype=torch.float32)).all()
        assert who[:, 0].unique().numel() == ENVS * AGENTS // 4


def test_a_sample_minibatch_mixes_trajectories():
    """The default draws samples on their own: a minibatch takes a few steps of many
    agents (the chance that every one of them is whole is nil)."""
    mb = minibatches(learner("samples", epochs=1, num_minibatches=4))[0]
    counts = torch.unique(mb[:, 0], return_counts=True)[1]
    assert (counts < STEPS).any()


def test_with_one_minibatch_both_shuffles_take_the_same_step():
    """The loss is a mean over the minibatch: with all samples in one, their order changes
    only the rounding."""
    learners = [learner(s, epochs=1, num_minibatches=1) for s in ppo.SHUFFLES]
    for learn in learners:
        learn.update(batch())
    for a, b in zip(*(list(learn.policy.parameters()) for learn in learners), strict=True):
        torch.testing.assert_close(a, b, rtol=1e-5, atol=1e-6)


def test_the_trainer_trains_by_trajectory():
    sets = ["env.num_envs=4", "trainer.steps=8", "algorithm.num_minibatches=2",
            "algorithm.shuffle=trajectories"]
    trainer = Trainer("cartpole", gpu=False, sets=sets)
    before = [p.detach().clone() for p in trainer.learners["cart"].policy.parameters()]
    metrics = trainer.train(2, progress=False)
    after = list(trainer.learners["cart"].policy.parameters())
    assert any(not torch.equal(a, b) for a, b in zip(after, before, strict=True))
    assert metrics


@pytest.mark.parametrize("sets, words", [
    (["algorithm.shuffle=episodes"], "algorithm.shuffle must be one of samples, trajectories, "
                                     "got 'episodes'"),
    (["algorithm.shuffle=trajectories", "algorithm.num_minibatches=3"],
     "algorithm.num_minibatches=3 does not divide the 4 trajectories of policy 'cart' per "
     r"iteration \(envs x its agents\). Choose one of 1, 2, 4, or change env.num_envs"),
    (["algorithm.shuffle=trajectories", "algorithm.num_minibatches=8"],
     "algorithm.num_minibatches=8 is more than the 4 trajectories"),
    (["algorithm.num_minibatches=8"], None),  # 8 divides the 32 samples
])
def test_minibatches_must_divide_what_is_shuffled(sets, words):
    def make():
        return Trainer("cartpole", gpu=False, sets=["env.num_envs=4", "trainer.steps=8", *sets])

    if words is None:
        make()
        return
    with pytest.raises(ConfigError, match=words):
        make()
