"""A2C: advantage actor-critic (Mnih et al., 2016, in its synchronous form).

One rollout, one gradient step. The actor raises the log-probability of each action in
proportion to its advantage (how much better it turned out than the critic expected);
the critic regresses onto the returns; an entropy bonus keeps the policy from settling
too early. With thousands of envs the batch is large, so one step per rollout is enough.

A batch of millions of samples goes through the networks in parts (`chunk`, from
trainer.chunk_samples): each part's loss is its sum over the whole batch's size, so the
parts' gradients add up to the one gradient of the whole batch, with the activations of
one part in memory at a time.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from wd_teach.train.algorithms.base import Capabilities, LearnerBase, LearnerOptions
from wd_teach.train.algorithms.common import (
    check_loss_weights,
    check_returns,
    chunks,
    episode_ends,
    finish_step,
    flat,
    gae,
    normalize,
)

#: A distribution to sample from and a critic; an update that a CUDA graph can record,
#: worked out in parts; it works the log-probabilities out anew, so the rollout keeps none.
CAPABILITIES = Capabilities(policy="stochastic", graph_update=True, log_probs=False,
                            chunked_update=True)


@dataclass(frozen=True)
class Config:
    gamma: float = 0.99  # discount per step
    gae_lambda: float = 1.0  # 1: n-step returns over the whole rollout
    value_coef: float = 0.5  # weight of the critic's loss
    entropy_coef: float = 0.01  # weight of the entropy bonus
    max_grad_norm: float = 0.5  # clip the gradient's global norm to this (0: no clip)
    normalize_advantages: bool = False


def check_ranges(config: Config) -> None:
    """Each hyperparameter in its range, before anything is built: NaN, infinity or a
    value out of range would otherwise train quietly to NaN."""
    check_returns(config)
    check_loss_weights(config)


def check(config: Config, samples: int, policy: str, *, steps: int) -> None:
    """Nothing to divide: A2C takes the whole batch at once."""


def loss(log_prob, entropy, value, advantages, returns, config: Config, samples):
    """The A2C loss of one part of the batch: policy gradient, critic regression, entropy
    bonus, each a sum over the part divided by the whole batch's `samples` (so the parts'
    losses add up to the batch's means). Returns (loss, policy_loss, value_loss, entropy)."""
    policy_loss = -(advantages * log_prob).sum() / samples
    value_loss = 0.5 * (returns - value).pow(2).sum() / samples
    entropy = entropy.sum() / samples
    total = policy_loss + config.value_coef * value_loss - config.entropy_coef * entropy
    return total, policy_loss, value_loss, entropy


def counted_only(weight, log_prob, entropy, value, returns):
    """(log_prob, entropy, value, returns) with every term of a sample that does not count
    (weight 0: an agent out of the game) made 0, so that `loss`'s sums hold only the
    samples that count (its `samples` is then their number). Weights are 0 or 1, so the
    critic's error (weight * returns - weight * value)**2 is weight * (returns - value)**2.
    An advantage needs no weight: its every term is multiplied by a log-probability."""
    if weight is None:
        return log_prob, entropy, value, returns
    return log_prob * weight, entropy * weight, value * weight, returns * weight


class Learner(LearnerBase):
    """One policy group's A2C: one gradient step per rollout."""

    def __init__(self, policy: torch.nn.Module, config: Config, options: LearnerOptions):
        super().__init__(policy, config, options)
        self.optimizer = self.adam(policy.parameters(), options.lr, eps=1e-5)

    def update(self, batch) -> dict[str, torch.Tensor]:
        c = self.config
        advantages, returns = gae(batch.rewards, batch.values, episode_ends(batch),
                                  batch.last_values, c.gamma, c.gae_lambda)
        weight = batch.active  # None: every sample counts; else only agents in the game
        if c.normalize_advantages:
            advantages = normalize(advantages, weight=weight)
        steps, samples = advantages.shape[0], advantages.numel()
        counted = samples if weight is None else weight.sum().clamp(min=1)

        self.optimizer.zero_grad(set_to_none=True)
        sums = torch.zeros(4, device=advantages.device)
        for part in chunks(steps, samples // steps, self.options.chunk_samples):
            # A centralized critic's global state, one row per sample (none: independent).
            states = () if batch.states is None else (flat(batch.states[part]),)
            losses = self.part_loss(batch.obs[part], flat(batch.actions[part]),
                                    flat(advantages[part]), flat(returns[part]), counted,
                                    *states,
                                    weight=None if weight is None else flat(weight[part]))
            (self.backward or torch.Tensor.backward)(losses[0])
            sums += torch.stack(losses).detach()
        finish_step(self.optimizer, self.policy.parameters(), c.max_grad_norm, self.reduce)
        return dict(zip(("loss", "policy_loss", "value_loss", "entropy"), sums, strict=True))

    def part_loss(self, obs, actions, advantages, returns, samples, *states, weight=None):
        """The loss of one part of the batch: `obs` [steps, envs, agents, features] as the
        rollout buffer holds them, the rest one row per sample. `states`: with a
        centralized critic, the global states it reads (none with independent critics).
        `weight`: which samples count (agents in the game), None: all."""
        log_prob, entropy, value = self.policy.evaluate(flat(obs), actions, *states)
        log_prob, entropy, value, returns = counted_only(weight, log_prob, entropy, value,
                                                         returns)
        return loss(log_prob, entropy, value, advantages, returns, self.config, samples)
