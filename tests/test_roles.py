"""Agents that differ: roles that see different observation sizes, each policy group with its
own algorithm and hyperparameters (envs/speaker_listener shows both), on the CPU."""

import numpy as np
import pytest
import torch

from wd_teach.env.wrapper import EnvWrapper
from wd_teach.errors import ConfigError
from wd_teach.train.algorithms import a2c, ppo
from wd_teach.train.config import load_config
from wd_teach.train.trainer import Trainer
from wd_teach_envs.speaker_listener import SpeakerListener
from wd_teach_envs.speaker_listener.env import LISTENER_OBS, SPEAKER_OBS

SMALL = ["env.num_envs=4", "trainer.steps=5"]


def test_each_role_sees_its_own_size_and_its_policy_reads_only_that():
    trainer = Trainer("speaker_listener", gpu=False, sets=SMALL)
    sizes = {g.name: g.obs_size for g in trainer.groups}
    assert sizes == {"speaker": SPEAKER_OBS, "listener": LISTENER_OBS}
    speaker = trainer.groups[0]
    assert trainer.policies["speaker"].actor[0].in_features == SPEAKER_OBS
    assert trainer.policies["listener"].actor[0].in_features == LISTENER_OBS
    # The speaker's part of the store's obs is its role's columns, the goal's one-hot.
    seen = speaker.observe(trainer.wrapper.obs, 1)
    assert seen.shape == (4, 1, SPEAKER_OBS)
    goal = trainer.wrapper.store["goal"].long()
    np.testing.assert_array_equal(seen[:, 0].argmax(-1).numpy(), goal.numpy())
    assert torch.equal(seen.sum(-1), torch.ones(4, 1))
    # ... and what the rollout buffer gives its learner is the same narrow view.
    trainer.iterate()
    batch = trainer.rollout.buffer.group(speaker)
    assert batch.obs.shape == (5, 4, 1, SPEAKER_OBS)


def test_the_observation_columns_a_role_does_not_use_stay_zero():
    wrapper = EnvWrapper(SpeakerListener(), 6, "numpy", seed=3)
    for _ in range(4):
        wrapper.store["actions"].copy_(torch.randint(0, 5, (6, 2)))
        wrapper.step()
        assert not wrapper.obs[:, 0, SPEAKER_OBS:].any()


def test_one_policy_over_roles_of_different_sizes_is_refused():
    with pytest.raises(ConfigError, match="policies.both.agents: .*different observation sizes "
                                          r"\(speaker 5, listener 17\)"):
        Trainer("speaker_listener", gpu=False, sets=[
            *SMALL, "policies.speaker=null", "policies.listener=null",
            "policies.both.agents=all"])


def test_each_group_has_its_own_algorithm_and_the_run_s_shared_hyperparameters():
    config = load_config("speaker_listener", gpu=False, sets=[
        "algorithm.gamma=0.9", "policies.speaker.algorithm.clip_coef=0.1",
        "policies.listener.algorithm.name=a2c"])
    name, speaker = config.algorithm_of("speaker")
    assert name == "ppo" and isinstance(speaker, ppo.Config)
    assert speaker.gamma == 0.9 and speaker.clip_coef == 0.1  # the run's, then its own
    assert speaker.epochs == config.algorithm.epochs  # the run's PPO section
    name, listener = config.algorithm_of("listener")
    assert name == "a2c" and isinstance(listener, a2c.Config) and listener.gamma == 0.9
    assert listener.gae_lambda == config.algorithm.gae_lambda  # both know it: the run's

    trainer = Trainer(config)
    assert isinstance(trainer.learners["speaker"], ppo.Learner)
    assert isinstance(trainer.learners["listener"], a2c.Learner)
    trainer.iterate()
    row = trainer.history[-1]
    assert "speaker/clip_fraction" in row, "PPO's update ran for the speaker"
    assert "listener/clip_fraction" not in row, "and A2C's, which clips nothing, for the listener"


@pytest.mark.parametrize("sets, message", [
    (["policies.speaker.algorithm.name=ddpg"], "must be of one kind"),
    (["policies.speaker.algorithm.name=sarsa"], "policies.speaker.algorithm.name='sarsa'"),
    (["policies.speaker.algorithm.clip=0.1"], "clip"),
    (["policies.speaker.algorithm.epochs=0"], "epochs"),
])
def test_a_bad_group_algorithm_is_refused_with_its_key(sets, message):
    with pytest.raises(ConfigError, match=message):
        load_config("speaker_listener", gpu=False, sets=sets)


def test_two_algorithms_resume_bit_for_bit(tmp_path):
    sets = [*SMALL, "policies.listener.algorithm.name=a2c"]
    straight = Trainer("speaker_listener", gpu=False, sets=sets)
    straight.train(4, progress=False)
    assert isinstance(straight.learners["listener"], a2c.Learner)
    first = Trainer("speaker_listener", gpu=False, sets=sets)
    first.train(2, progress=False)
    resumed = Trainer.from_checkpoint(first.save(tmp_path / "c.safetensors"), gpu=False)
    resumed.train(2, progress=False)
    for name, policy in straight.policies.items():
        for want, got in zip(policy.state_dict().values(),
                             resumed.policies[name].state_dict().values(), strict=True):
            assert torch.equal(want, got), name


def test_autoscale_sizes_suit_every_group_s_own_algorithm():
    """--envs auto only offers sizes each group's algorithm accepts: the speaker's PPO needs
    its 7 minibatches to divide its samples (envs x 15 steps), the listener's A2C nothing;
    with both on the run's PPO (4 minibatches), a multiple of 4 envs."""
    from wd_teach.scale.autoscale import valid_sizes

    config = load_config("speaker_listener", gpu=False, sets=[
        "policies.speaker.algorithm.num_minibatches=7", "policies.listener.algorithm.name=a2c"])
    assert valid_sizes(config)(100) == 98
    assert valid_sizes(load_config("speaker_listener", gpu=False))(99) == 96


def test_a_centralized_critic_reads_both_roles_views():
    trainer = Trainer("speaker_listener", gpu=False, sets=SMALL)  # its config's critic
    state = trainer.env.global_state(trainer.wrapper.store)
    obs = trainer.wrapper.obs
    assert torch.equal(state, torch.cat([obs[:, 0, :SPEAKER_OBS], obs[:, 1]], dim=1))
    assert trainer.policies["speaker"].critic[0].in_features == SPEAKER_OBS + LISTENER_OBS \
        + SPEAKER_OBS  # the global state beside its own observation
    trainer.iterate()
    assert np.isfinite(trainer.history[-1]["speaker/value_loss"])


def test_the_speaker_listener_bench_scores_both_critics_over_the_same_seeds(tmp_path, bench_script):
    """bench/speaker_listener.py at toy size: both critics over the seeds, the gap between
    the trained speaker and a random one per seed, an interval for each, all in its JSON."""
    import json

    bench = bench_script("speaker_listener")
    out = tmp_path / "speaker_listener.json"
    bench.main([str(out), "--seeds", "2", "--iterations", "2", "--envs", "4",
                "--eval-envs", "4"])
    result = json.loads(out.read_text())
    rows = {(r["critic"], r["measure"]): r for r in result["rows"]}
    for critic in ("independent", "centralized"):
        trained, babble, gap = (rows[critic, m] for m in ("trained", "random speaker", "gap"))
        for seed in ("0", "1"):
            assert gap["per_seed"][seed] == pytest.approx(
                trained["per_seed"][seed] - babble["per_seed"][seed])
        assert gap["low"] <= gap["iqm"] <= gap["high"] and gap["verdict"]
