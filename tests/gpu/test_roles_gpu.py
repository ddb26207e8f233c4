"""Agents that differ, on the GPU under both kernel backends: speaker_listener's two
observation sizes, a role with fewer choices than the env's (tests/test_role_actions.py's
FewWords), recorded and replayed as CUDA graphs bit for bit like the step-by-step loop."""

import pytest
import torch
from test_role_actions import WORDS, FewWords

from wd_teach.device import BACKENDS
from wd_teach.train.trainer import Trainer
from wd_teach_envs.speaker_listener.env import LISTENER, SPEAKER

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
