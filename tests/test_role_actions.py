"""Roles that choose from different action spaces (Env.role_action_spaces), on the CPU: each
role's policy has its own number of choices, the sampler never draws a choice a role lacks,
and random baselines, PettingZoo and bad spaces follow the role's space.

The env is speaker_listener with the speaker given three of its five words: the listener keeps
its five moves, and the env's kernels are unchanged (a word is still a number under five)."""

import pytest
import torch
from gymnasium import spaces

from wd_teach.errors import EnvError
from wd_teach.train.acting import random_actions
from wd_teach.train.trainer import Trainer
from wd_teach_envs.speaker_listener import SpeakerListener
from wd_teach_envs.speaker_listener.env import LISTENER, SPEAKER

WORDS = 3
SMALL = ["env.num_envs=16", "trainer.steps=8"]


class FewWords(SpeakerListener):
    """The speaker says one of three words; the listener still has five moves."""

    def role_action_spaces(self):
        return {"speaker": spaces.Discrete(WORDS)}


class BadRoleSpace(SpeakerListener):
    def __init__(self, space, **params):
        super().__init__(**params)
        self.space = space

    def role_action_spaces(self):
        return {"speaker": self.space}


@pytest.mark.parametrize("backend", ["numpy", "numba"])  # numba: its sampler kernel
def test_a_role_with_fewer_choices_has_a_policy_of_its_size_and_never_draws_the_rest(backend):
    trainer = Trainer(FewWords(), gpu=False, sets=[*SMALL, f"env.backend={backend}"])
    speaker, listener = trainer.groups
    assert speaker.action_space == spaces.Discrete(WORDS) and listener.action_space is None
    obs = speaker.observe(trainer.wrapper.obs, 1)
    assert trainer.policies["speaker"].logits(obs).shape[-1] == WORDS
    assert trainer.policies["listener"].logits(listener.observe(trainer.wrapper.obs, 1)
                                               ).shape[-1] == 5
    said, moved = set(), set()
    for _ in range(3):
        trainer.iterate()
        actions = trainer.rollout.buffer.actions
        said |= set(actions[..., SPEAKER, :].flatten().tolist())
        moved |= set(actions[..., LISTENER, :].flatten().tolist())
    assert said == set(range(WORDS)), said  # every word it has, and no other
    assert moved == set(range(5)), moved  # the listener's choices are all still there
    # The sampler's row of the speaker: its three words' probabilities, then zeros.
    probs = trainer.rollout.acting.sampler.probs[:, SPEAKER]
    assert not probs[:, WORDS:].any()
    torch.testing.assert_close(probs[:, :WORDS].sum(-1), torch.ones(16, device=probs.device))


def test_a_role_with_its_own_choices_draws_random_actions_among_them():
    trainer = Trainer(FewWords(), gpu=False, sets=SMALL)
    speaker, listener = trainer.groups
    generator = torch.Generator().manual_seed(0)
    words, moves = set(), set()
    for _ in range(20):
        random_actions(trainer.wrapper, speaker, generator)
        random_actions(trainer.wrapper, listener, generator)
        actions = trainer.wrapper.store["actions"]
        words |= set(actions[:, SPEAKER].tolist())
        moves |= set(actions[:, LISTENER].tolist())
    assert words == set(range(WORDS)) and moves == set(range(5))


def test_evaluation_against_a_random_role_stays_in_its_space():
    trainer = Trainer(FewWords(), gpu=False, sets=SMALL)
    result = trainer.evaluate(num_envs=8, random=["speaker"], record=True)
    said = result.frames["word"]  # env 0's word at every step (-1 before the first)
    assert said.max() < WORDS and len(set(said[said >= 0].tolist())) > 1, said


def test_one_policy_over_roles_with_different_action_spaces_is_refused():
    env = FewWords()
    with pytest.raises(EnvError, match=r"different action spaces \(speaker Discrete\(3\), "
                                       r"listener Discrete\(5\)\)"):
        env.action_space_of_agents([SPEAKER, LISTENER])
    assert env.action_space_of_agents([LISTENER]) == spaces.Discrete(5)


@pytest.mark.parametrize("space, message", [
    (spaces.Discrete(7), "does not fit in the env's action_space"),
    (spaces.MultiDiscrete([2, 2]), "does not fit in the env's action_space"),
    (spaces.Box(-1, 1, (1,)), "does not fit in the env's action_space"),
    (spaces.MultiDiscrete([3]), "does not fit in the env's action_space"),  # another kind
    (spaces.Discrete(3, start=1), "does not fit in the env's action_space"),  # not from 0
])
def test_a_role_space_that_does_not_fit_the_env_s_is_refused(space, message):
    with pytest.raises(EnvError, match=f"role 'speaker' has .*{message}"):
        BadRoleSpace(space).action_space_of(SPEAKER)
    with pytest.raises(Exception, match=message):
        Trainer(BadRoleSpace(space), gpu=False, sets=SMALL)


def test_pettingzoo_gives_each_role_its_action_space_and_refuses_what_lies_outside():
    pytest.importorskip("pettingzoo", reason="PettingZoo is an extra: pip install -e "
                        '".[pettingzoo]" (the dev extra, which CI installs, has it)')
    from pettingzoo.test import parallel_api_test

    from wd_teach.interop.pettingzoo import PettingZooEnv

    env = PettingZooEnv(FewWords(), "numpy")
    speaker, listener = env.possible_agents
    assert env.action_space(speaker) == spaces.Discrete(WORDS)
    assert env.action_space(listener) == spaces.Discrete(5)
    env.reset(seed=0)
    with pytest.raises(EnvError, match="outside its role's action space Discrete\\(3\\)"):
        env.step({speaker: 4, listener: 0})
    parallel_api_test(PettingZooEnv(FewWords(), "numpy"), num_cycles=20)


def test_torchrl_gives_each_role_its_action_spec_and_masks_a_mixed_group():
    pytest.importorskip("torchrl", reason='TorchRL is an extra: pip install -e ".[torchrl]" '
                        "(the dev extra, which CI installs, has it)")
    from torchrl.envs.utils import check_env_specs

    from wd_teach.interop.torchrl import TorchRLEnv

    by_role = TorchRLEnv(FewWords(), 4, "numpy")  # the env's roles: one group each
    assert by_role.full_action_spec["speaker", "action"].space.n == WORDS
    assert by_role.full_action_spec["listener", "action"].space.n == 5
    check_env_specs(by_role)
    mixed = TorchRLEnv(FewWords(), 4, "numpy", group_map={"both": [SPEAKER, LISTENER]})
    spec = mixed.full_action_spec["both", "action"]
    draws = torch.stack([spec.rand() for _ in range(200)])
    assert int(draws[..., SPEAKER].max()) == WORDS - 1 and int(draws[..., LISTENER].max()) == 4
    assert not spec.is_in(torch.tensor([[4, 0]] * 4))  # a word the speaker lacks
    check_env_specs(mixed)


def test_a_role_space_for_a_role_the_env_does_not_have_is_refused():
    class Misnamed(SpeakerListener):
        def role_action_spaces(self):
            return {"speakers": spaces.Discrete(WORDS)}  # the role is "speaker"

    with pytest.raises(EnvError, match=r"names roles that agent_roles\(\) does not: 'speakers'"):
        Misnamed().action_space_of(SPEAKER)


def test_lightning_trains_roles_with_their_own_action_spaces_as_the_plain_trainer(tmp_path):
    from wd_teach.train.lightning import TrainingModule, make_lightning_trainer

    module = TrainingModule(FewWords(), gpu=False, sets=SMALL)
    make_lightning_trainer(module, 2, out=tmp_path, progress=False).fit(module)
    plain = Trainer(FewWords(), gpu=False, sets=SMALL)
    plain.train(2, progress=False)
    for name in ("speaker", "listener"):
        for want, got in zip(plain.policies[name].parameters(),
                             module.run.policies[name].parameters(), strict=True):
            assert torch.equal(want, got), name
