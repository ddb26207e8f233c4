"""The centralized critic on the GPU: taken to the plain floor, recorded and replayed as CUDA
graphs bit for bit like the step-by-step loop, and the global state the same from both
kernel backends."""

import pytest
import torch

from wd_teach.device import BACKENDS
from wd_teach.env.wrapper import EnvWrapper
from wd_teach.train.trainer import Trainer
from wd_teach_envs.tag_continuous import TagContinuous

SMALL_TAG = ["env.num_envs=16", "env.params.num_taggers=3", "env.params.num_runners=20",
             "env.params.num_nearest=5", "env.params.episode_length=20", "trainer.steps=20",
             "policies.taggers.hidden=[64, 64]", "policies.runners.hidden=[64, 64]",
             "trainer.critic=centralized",
             # a centralized critic shares no body with its actor: two networks a policy
             "policies.taggers.shared=false", "policies.runners.shared=false"]
PPO = ["algorithm.name=ppo", "algorithm.epochs=2", "algorithm.num_minibatches=4"]
ALGORITHMS = {"a2c": [], "ppo": PPO, "ppo-trajectories": [*PPO, "algorithm.shuffle=trajectories"]}


def tag(backend, *more):
    return Trainer("tag_continuous", gpu=True, sets=[f"env.backend={backend}", *SMALL_TAG,
                                                      *more])


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("algorithm", list(ALGORITHMS))
@pytest.mark.parametrize("precision", ["fp32", "bf16"])
def test_a_replayed_centralized_run_is_the_step_by_step_run_bit_for_bit(backend, algorithm,
                                                                        precision):
    sets = [f"trainer.precision={precision}", *ALGORITHMS[algorithm]]
    graphed, eager = tag(backend, *sets), tag(backend, *sets, "trainer.cuda_graphs=false")
    assert graphed.fast is False and graphed.graphed == {"rollout": True, "update": True}
    for _ in range(4):  # run, record, replay, replay
        graphed.iterate()
        eager.iterate()
        assert torch.equal(graphed.rollout.buffer.states, eager.rollout.buffer.states)
        assert torch.equal(graphed.rollout.buffer.actions, eager.rollout.buffer.actions)
        for name in graphed.policies:
            for got, want in zip(graphed.policies[name].parameters(),
                                 eager.policies[name].parameters(), strict=True):
                assert torch.equal(got, want), name
    assert graphed.rollout._graphed.replays >= 2


def test_the_global_state_agrees_across_backends():
    """Within the env's own tolerance, as the consistency check holds its observations."""
    env = TagContinuous(num_taggers=3, num_runners=20, num_nearest=5)
    reference = EnvWrapper(env, 64, "numpy", seed=2)
    generator = torch.Generator().manual_seed(4)
    actions = [reference.random_actions(generator) for _ in range(10)]
    for step in actions:
        reference.step(step)
    want = env.global_state(reference.store)
    for backend in BACKENDS:
        wrapper = EnvWrapper(env, 64, backend, seed=2)
        for step in actions:
            wrapper.step(step)
        torch.testing.assert_close(env.global_state(wrapper.store).cpu(), want,
                                   atol=env.tolerance.atol, rtol=env.tolerance.rtol)
