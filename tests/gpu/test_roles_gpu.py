"""Agents that differ, on the GPU under both kernel backends: speaker_listener's two
observation sizes with a different algorithm per role (PPO speaker, A2C listener), and a
role with fewer choices than the env's (tests/test_role_actions.py's FewWords), each
recorded and replayed as CUDA graphs bit for bit like the step-by-step loop."""

import pytest
import torch
from test_role_actions import WORDS, FewWords

from wd_teach.device import BACKENDS
from wd_teach.train.algorithms import a2c, ppo
from wd_teach.train.trainer import Trainer
from wd_teach_envs.speaker_listener.env import LISTENER, LISTENER_OBS, SPEAKER, SPEAKER_OBS

SMALL = ["env.num_envs=64", "trainer.steps=15"]


def run(backend, *more):
    trainer = Trainer(FewWords(), gpu=True, sets=[f"env.backend={backend}", *SMALL, *more])
    trainer.train(4, progress=False)
    return trainer


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_role_with_fewer_choices_is_recorded_and_replayed_like_the_step_by_step_run(backend):
    graphed, eager = run(backend), run(backend, "trainer.cuda_graphs=false")
    assert graphed.graphed["rollout"] and not eager.graphed["rollout"]
    actions = graphed.rollout.buffer.actions
    assert int(actions[..., SPEAKER, :].max()) < WORDS  # never a word the speaker lacks
    assert int(actions[..., LISTENER, :].max()) == 4  # the listener still moves right
    torch.testing.assert_close(actions, eager.rollout.buffer.actions, rtol=0, atol=0)
    for name, policy in graphed.policies.items():
        for got, want in zip(policy.parameters(), eager.policies[name].parameters(),
                             strict=True):
            torch.testing.assert_close(got, want, rtol=0, atol=0)


def two_algorithms(backend, *more):
    trainer = Trainer("speaker_listener", gpu=True, sets=[
        f"env.backend={backend}", *SMALL, "policies.listener.algorithm.name=a2c",
        *more])
    trainer.train(4, progress=False)
    return trainer


@pytest.mark.parametrize("backend", BACKENDS)
def test_two_roles_of_two_sizes_train_with_two_algorithms_graphed_like_step_by_step(backend):
    graphed = two_algorithms(backend)
    eager = two_algorithms(backend, "trainer.cuda_graphs=false")
    assert isinstance(graphed.learners["speaker"], ppo.Learner)
    assert isinstance(graphed.learners["listener"], a2c.Learner)
    assert graphed.policies["speaker"].actor[0].in_features == SPEAKER_OBS
    assert graphed.policies["listener"].actor[0].in_features == LISTENER_OBS
    assert graphed.graphed["rollout"] and not eager.graphed["rollout"]
    for row in graphed.history:  # each group's own update ran, with finite losses
        assert "speaker/clip_fraction" in row and "listener/clip_fraction" not in row
        for name in ("speaker", "listener"):
            assert torch.isfinite(torch.tensor(float(row[f"{name}/loss"])))
    torch.testing.assert_close(graphed.rollout.buffer.actions, eager.rollout.buffer.actions,
                               rtol=0, atol=0)
    for name, policy in graphed.policies.items():
        for got, want in zip(policy.parameters(), eager.policies[name].parameters(),
                             strict=True):
            torch.testing.assert_close(got, want, rtol=0, atol=0)
