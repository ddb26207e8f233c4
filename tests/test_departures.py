"""Agents that leave the game (Tag's caught runners; Env.agents_in_game) count for nothing
in the losses and the metrics: the rollout records who was in the game, A2C and PPO weigh
each sample by it and end an agent's episode where it left, each checked against NumPy."""

import copy

import numpy as np
import pytest
import torch
from gymnasium import spaces

from wd_teach.train.algorithms import a2c, ppo
from wd_teach.train.algorithms.base import LearnerOptions
from wd_teach.train.policy import make_policy
from wd_teach.train.rollout import Batch
from wd_teach.train.trainer import Trainer

STEPS, ENVS, AGENTS, OBS = 6, 3, 4, 5


def batch_with_departures(seed=0):
    """A batch in which some agents leave: agent a of env e leaves after step leave[e, a]
    (STEPS or more: never), and env 1's episode ends after step 2 (everyone back)."""
    g = torch.Generator().manual_seed(seed)
    leave = torch.tensor([[1, 6, 3, 9], [0, 9, 9, 4], [2, 2, 9, 9]])
    dones = torch.zeros(STEPS, ENVS)
    dones[2, 1] = 1
    active = torch.ones(STEPS, ENVS, AGENTS)
    left = torch.zeros(STEPS, ENVS, AGENTS)
    for e in range(ENVS):
        for a in range(AGENTS):
            gone = False
            for t in range(STEPS):
                active[t, e, a] = 0.0 if gone else 1.0
                if not gone and t == int(leave[e, a]):
                    left[t, e, a], gone = 1.0, True
                if dones[t, e]:
                    gone = False  # the next episode starts with everyone in the game
    return Batch(obs=torch.randn(STEPS, ENVS, AGENTS, OBS, generator=g),
                 actions=torch.randint(0, 3, (STEPS, ENVS, AGENTS, 1), generator=g),
                 log_probs=torch.randn(STEPS, ENVS, AGENTS, generator=g).clamp(max=0) - 1,
                 values=torch.randn(STEPS, ENVS, AGENTS, generator=g),
                 rewards=torch.randn(STEPS, ENVS, AGENTS, generator=g),
                 dones=dones[..., None].expand(-1, -1, AGENTS),
                 last_values=torch.randn(ENVS, AGENTS, generator=g),
                 active=active, left=left)


def policy(seed=0):
    torch.manual_seed(seed)
    return make_policy("stochastic", OBS, spaces.Discrete(3), (16,))


def learner(module, config, seed=0):
    options = LearnerOptions(lr=1e-2, generator=torch.Generator().manual_seed(seed))
    return module.Learner(policy(seed), config, options)


def numpy_gae(batch, config):
    """(advantages, returns) in NumPy float64: GAE ending each agent's episode where its
    env's ended or it left."""
    r, v = batch.rewards.double().numpy(), batch.values.double().numpy()
    ends = np.maximum(batch.dones.numpy(), batch.left.numpy())
    last = batch.last_values.double().numpy()
    adv = np.zeros_like(r)
    carried = np.zeros_like(last)
    for t in reversed(range(STEPS)):
        nxt = last if t == STEPS - 1 else v[t + 1]
        alive = 1 - ends[t]
        delta = r[t] + config.gamma * nxt * alive - v[t]
        carried = delta + config.gamma * config.gae_lambda * alive * carried
        adv[t] = carried
    return adv, adv + v


def numpy_masked_a2c(batch, net, config):
    """A2C's losses with departures, in NumPy float64: numpy_gae's advantages, the sums over
    the active samples only."""
    adv, returns = numpy_gae(batch, config)
    w = batch.active.double().numpy()
    with torch.no_grad():
        log_prob, entropy, value = net.evaluate(batch.obs.reshape(-1, OBS),
                                                batch.actions.reshape(-1, 1))
    log_prob, entropy, value = (x.double().numpy().reshape(w.shape)
                                for x in (log_prob, entropy, value))
    n = w.sum()
    policy_loss = -(w * adv * log_prob).sum() / n
    value_loss = 0.5 * (w * (returns - value) ** 2).sum() / n
    ent = (w * entropy).sum() / n
    return {"policy_loss": policy_loss, "value_loss": value_loss, "entropy": ent,
            "loss": policy_loss + config.value_coef * value_loss - config.entropy_coef * ent}


def test_a2c_with_departures_matches_numpy():
    batch, config = batch_with_departures(), a2c.Config(gamma=0.9, gae_lambda=0.8)
    learn = learner(a2c, config)
    want = numpy_masked_a2c(batch, copy.deepcopy(learn.policy), config)
    got = learn.update(batch)
    for name, value in want.items():
        assert float(got[name]) == pytest.approx(value, rel=1e-5, abs=1e-6), name


def numpy_masked_ppo(batch, net, config):
    """PPO's losses with departures for one epoch of one minibatch (every sample, so the
    losses are those at the starting weights), in NumPy float64: numpy_gae's advantages
    normalised over the active samples only, the clipped objective, the critic's
    regression, the entropy and the clipped fraction averaged over them."""
    adv, returns = numpy_gae(batch, config)
    w = batch.active.double().numpy()
    n = w.sum()
    mean = (w * adv).sum() / n
    spread = np.sqrt((w * (adv - mean) ** 2).sum() / (n - 1))
    norm = (adv - mean) / (spread + 1e-8)
    with torch.no_grad():
        log_prob, entropy, value = net.evaluate(batch.obs.reshape(-1, OBS),
                                                batch.actions.reshape(-1, 1))
    log_prob, entropy, value = (x.double().numpy().reshape(w.shape)
                                for x in (log_prob, entropy, value))
    ratio = np.exp(log_prob - batch.log_probs.double().numpy())
    clipped = np.clip(ratio, 1 - config.clip_coef, 1 + config.clip_coef)
    policy_loss = -(w * np.minimum(ratio * norm, clipped * norm)).sum() / n
    value_loss = 0.5 * (w * (value - returns) ** 2).sum() / n
    ent = (w * entropy).sum() / n
    fraction = (w * (np.abs(ratio - 1) > config.clip_coef)).sum() / n
    return {"policy_loss": policy_loss, "value_loss": value_loss, "entropy": ent,
            "clip_fraction": fraction,
            "loss": policy_loss + config.value_coef * value_loss - config.entropy_coef * ent}


@pytest.mark.parametrize("shuffle", ["samples", "trajectories"])
def test_ppo_with_departures_matches_numpy(shuffle):
    """The batch's old log-probabilities are not the policy's, so ratios spread beyond
    the clip: the masked clipped objective is checked where clipping acts."""
    batch = batch_with_departures()
    config = ppo.Config(gamma=0.9, gae_lambda=0.8, epochs=1, num_minibatches=1,
                        shuffle=shuffle)
    learn = learner(ppo, config)
    want = numpy_masked_ppo(batch, copy.deepcopy(learn.policy), config)
    assert 0 < want["clip_fraction"] < 1  # both sides of the clip are exercised
    got = learn.update(batch)
    for name, value in want.items():
        assert float(got[name]) == pytest.approx(value, rel=1e-5, abs=1e-6), name


def scramble_departed(batch, seed=1):
    """The same batch with everything of the samples out of the game replaced by noise."""
    g = torch.Generator().manual_seed(seed)
    out = (1 - batch.active).bool()
    noisy = copy.copy(batch)
    noisy.obs = torch.where(out[..., None], torch.randn(batch.obs.shape, generator=g) * 9,
                            batch.obs)
    noisy.actions = torch.where(out[..., None], torch.randint(0, 3, batch.actions.shape,
                                                              generator=g), batch.actions)
    noisy.rewards = torch.where(out, torch.randn(batch.rewards.shape, generator=g) * 9,
                                batch.rewards)
    noisy.values = torch.where(out, torch.randn(batch.values.shape, generator=g) * 9,
                               batch.values)
    noisy.log_probs = torch.where(out, -torch.rand(batch.log_probs.shape, generator=g) * 9,
                                  batch.log_probs)
    return noisy


@pytest.mark.parametrize("module, config", [
    (a2c, a2c.Config(normalize_advantages=True)),
    (ppo, ppo.Config(num_minibatches=2, epochs=2)),
    (ppo, ppo.Config(num_minibatches=3, epochs=1, shuffle="trajectories")),
])
def test_what_a_departed_agent_did_changes_nothing(module, config):
    """Update twice from one start, once with the departed samples scrambled: the same
    weights and losses (and scrambling an active sample does change them)."""
    batch = batch_with_departures()
    weights = []
    for b in (batch, scramble_departed(batch)):
        learn = learner(module, config)
        losses = learn.update(b)
        weights.append((losses, [p.detach().clone() for p in learn.policy.parameters()]))
    (first, a), (second, b) = weights
    for x, y in zip(a, b, strict=True):
        torch.testing.assert_close(x, y, rtol=1e-5, atol=1e-6)
    for name in first:
        torch.testing.assert_close(first[name], second[name], rtol=1e-5, atol=1e-6)

    changed = copy.copy(batch)
    changed.rewards = batch.rewards.clone()
    changed.rewards[0, 0, 0] += 5.0  # agent 0 of env 0 is in the game at step 0
    learn = learner(module, config)
    learn.update(changed)
    assert any(not torch.allclose(p, q) for p, q in zip(learn.policy.parameters(), a, strict=True))


def test_tags_rollout_records_who_was_in_the_game_and_the_reward_counts_only_them():
    trainer = Trainer("tag_continuous", gpu=False, sets=[
        "env.num_envs=3", "trainer.steps=40", "env.params.episode_length=30"])
    trainer.iterate()
    buffer = trainer.rollout.buffer
    active, left, dones = (buffer.active.numpy(), buffer.left.numpy(),
                           buffer.dones.numpy())
    assert left.sum() > 0, "some runners were caught"
    taggers = trainer.env.agent_roles()["taggers"]
    assert active[:, :, taggers].all() and not left[:, :, taggers].any(), "taggers stay"
    for t in range(active.shape[0] - 1):
        # Leaving is exactly: in the game at t, out at t+1 (unless the episode ended).
        going_on = dones[t] == 0
        want = active[t] * (1 - active[t + 1])
        np.testing.assert_array_equal(left[t][going_on], want[going_on])
        assert active[t + 1][~going_on].all(), "a new episode starts with everyone"
    runners = trainer.groups[1]
    rewards = buffer.rewards.numpy()[:, :, list(runners.agents)]
    in_game = active[:, :, list(runners.agents)]
    want = rewards.sum() / in_game.sum()
    assert trainer.history[-1]["runners/reward"] == pytest.approx(want, rel=1e-5)
