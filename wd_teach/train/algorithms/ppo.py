"""PPO: proximal policy optimisation (Schulman et al., 2017), the clipped objective.

A2C takes one step per rollout because after a step the rollout no longer comes from the
policy being trained. PPO takes many (several epochs of minibatches) and stays honest with
the ratio r = pi_new(a|s) / pi_old(a|s): the objective is min(r * A, clip(r, 1 - eps,
1 + eps) * A), so moving an action's probability further than eps brings no more reward.
GAE advantages, normalised per minibatch; optionally the critic's step is clipped alike.

A minibatch is either any samples (`shuffle="samples"`, every agent step on its own, as in
CleanRL) or whole trajectories (`shuffle="trajectories"`, each agent's steps of the
rollout kept together, as in JaxMARL's IPPO). The gradient's expectation is the same; the
second gathers a few long rows instead of many short ones, and a GPU gathers by the row.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from wd_teach.errors import ConfigError
from wd_teach.ranges import require_number, require_whole
from wd_teach.train.algorithms.base import Capabilities, LearnerBase, LearnerOptions
from wd_teach.train.algorithms.common import (
    check_loss_weights,
    check_returns,
    episode_ends,
    flat,
    gae,
    gradient_step,
    normalize,
)

#: A distribution to sample from and a critic; an update that a CUDA graph can record: its
#: only random numbers, the minibatch orders, are drawn before it (`prepare`) into memory
#: that the recording reads.
CAPABILITIES = Capabilities(policy="stochastic", graph_update=True)


@dataclass(frozen=True)
class Config:
    gamma: float = 0.99
    gae_lambda: float = 0.95
    clip_coef: float = 0.2  # eps: how far the ratio may move from 1
    clip_value: bool = False  # clip the critic's change like the ratio
    value_coef: float = 0.5
    entropy_coef: float = 0.01
    max_grad_norm: float = 0.5
    epochs: int = 4  # passes over each rollout
    num_minibatches: int = 4  # per pass; must divide every policy's samples
    normalize_advantages: bool = True
    shuffle: str = "samples"  # what a minibatch draws: "samples" or "trajectories"


SHUFFLES = ("samples", "trajectories")


def check_ranges(config: Config) -> None:
    """Each hyperparameter in its range, before anything is built: NaN, infinity or a
    value out of range would otherwise train quietly to NaN."""
    check_returns(config)
    check_loss_weights(config)
    require_number("algorithm.clip_coef", config.clip_coef, low=0, low_open=True)
    require_whole("algorithm.epochs", config.epochs, low=1)
    require_whole("algorithm.num_minibatches", config.num_minibatches, low=1)
    if config.shuffle not in SHUFFLES:
        raise ConfigError(f"algorithm.shuffle must be one of {', '.join(SHUFFLES)}, got "
                          f"{config.shuffle!r}.")


def check(config: Config, samples: int, policy: str, *, steps: int) -> None:
    """Minibatches of equal size: num_minibatches must divide what is shuffled, the
    policy's samples or (shuffle="trajectories") its trajectories, samples / steps."""
    if config.shuffle == "trajectories":
        count, name, per, change = (samples // steps, "trajectories", "envs x its agents",
                                    "env.num_envs")
    else:
        count, name, per, change = (samples, "samples", "steps x envs x its agents",
                                    "trainer.steps or env.num_envs")
    if config.num_minibatches > count:
        raise ConfigError(f"algorithm.num_minibatches={config.num_minibatches} is more than "
                          f"the {count:,} {name} of policy {policy!r} per iteration ({per}): "
                          f"a minibatch needs at least one. Use fewer minibatches, or more "
                          f"{change}.")
    if count % config.num_minibatches:
        divisors = [d for d in range(1, min(count, 64) + 1) if count % d == 0]
        raise ConfigError(f"algorithm.num_minibatches={config.num_minibatches} does not divide "
                          f"the {count:,} {name} of policy {policy!r} per iteration ({per}). "
                          f"Choose one of {', '.join(map(str, divisors))}, or change "
                          f"{change}.")


def loss(log_prob, entropy, value, old_log_prob, old_value, advantage, returns,
         config: Config, weight=None):
    """The PPO loss of one minibatch: the clipped objective (the pessimistic one of the
    ratio's two terms), the critic's regression (clipped like the ratio if asked) and the
    entropy bonus. `weight`: 1 for a sample that counts, 0 for an agent out of the game;
    None: every sample counts. Returns (loss, policy_loss, value_loss, entropy, clipped
    fraction)."""

    def mean(x):  # over the samples that count
        return x.mean() if weight is None else (x * weight).sum() / weight.sum().clamp(min=1)

    ratio = (log_prob - old_log_prob).exp()
    clipped_ratio = ratio.clamp(1 - config.clip_coef, 1 + config.clip_coef)
    policy_loss = -mean(torch.min(ratio * advantage, clipped_ratio * advantage))
    value_error = (value - returns).pow(2)
    if config.clip_value:
        moved = old_value + (value - old_value).clamp(-config.clip_coef, config.clip_coef)
        value_error = torch.max(value_error, (moved - returns).pow(2))
    value_loss = 0.5 * mean(value_error)
    entropy = mean(entropy)
    total = policy_loss + config.value_coef * value_loss - config.entropy_coef * entropy
    clipped = mean(((ratio - 1).abs() > config.clip_coef).float())
    return total, policy_loss, value_loss, entropy, clipped


class Learner(LearnerBase):
    """One policy group's PPO: epochs of shuffled minibatches over each rollout."""

    def __init__(self, policy: torch.nn.Module, config: Config, options: LearnerOptions):
        super().__init__(policy, config, options)
        self.optimizer = self.adam(policy.parameters(), options.lr, eps=1e-5)
        self.orders: torch.Tensor | None = None  # [epochs, samples]: each epoch's shuffle
        self._prepared = False

    def prepare(self, batch) -> None:
        """Draw every epoch's minibatch order for the next update, in place, so that a
        recorded update reads new orders on each replay."""
        steps, envs, agents = batch.rewards.shape
        count = envs * agents if self.config.shuffle == "trajectories" else steps * envs * agents
        device = batch.rewards.device
        if self.orders is None or self.orders.shape != (self.config.epochs, count):
            self.orders = torch.empty(self.config.epochs, count, dtype=torch.long,
                                      device=device)
        for epoch in range(self.config.epochs):
            torch.randperm(count, generator=self.generator, device=device,
                           out=self.orders[epoch])
        self._prepared = True

    def update(self, batch) -> dict[str, torch.Tensor]:
        c = self.config
        if not self._prepared:  # called directly (Lightning, a notebook): draw them now
            self.prepare(batch)
        self._prepared = False
        advantages, returns = gae(batch.rewards, batch.values, episode_ends(batch),
                                  batch.last_values, c.gamma, c.gae_lambda)
        tensors = self.sample_rows(batch, advantages, returns)
        # Which samples count: all, or (agents leave the game) those in it as they acted.
        weights = None if batch.active is None else self.rows(batch.active)
        rows = tensors if weights is None else (*tensors, weights)  # weights drawn alike
        by_trajectory = c.shuffle == "trajectories"
        count = tensors[0].shape[0]
        size = count // c.num_minibatches
        sums = torch.zeros(5, device=advantages.device)  # the losses, entropy, clipped fraction

        for order in self.orders:
            for start in range(0, count, size):
                i = order[start:start + size]
                minibatch = [x[i].flatten(0, 1) if by_trajectory else x[i] for x in rows]
                weight = None if weights is None else minibatch.pop()
                losses = self.minibatch_loss(*minibatch, weight=weight)
                gradient_step(self.optimizer, losses[0], self.policy.parameters(),
                              c.max_grad_norm, self.backward, self.reduce)
                sums += torch.stack(losses).detach()
        means = sums / (c.epochs * c.num_minibatches)
        names = ("loss", "policy_loss", "value_loss", "entropy", "clip_fraction")
        return dict(zip(names, means, strict=True))

    def rows(self, x: torch.Tensor) -> torch.Tensor:
        """`x` [steps, envs, agents, ...] as the rows a minibatch draws from: one a sample,
        or (by trajectory) one an agent's steps of the rollout, [envs x agents, steps, ...]."""
        if self.config.shuffle == "trajectories":
            return x.movedim(0, 2).flatten(0, 1)
        return flat(x)

    def sample_rows(self, batch, advantages, returns) -> tuple[torch.Tensor, ...]:
        """(observations, actions, old log-probabilities, old values, advantages, returns,
        and with a centralized critic the global states), each as rows, in the order a
        minibatch takes them."""
        tensors = (batch.obs, batch.actions, batch.log_probs, batch.values, advantages,
                   returns)
        if batch.states is not None:
            tensors += (batch.states,)
        return tuple(map(self.rows, tensors))

    def minibatch_loss(self, obs, actions, old_log_probs, old_values, advantages, returns,
                       *states, weight=None):
        """The loss of one minibatch: the distribution's log-probabilities and entropy, the
        advantages normalised, the clipped objective. `states`: with a centralized critic,
        the global states it reads (none with independent critics). `weight`: which
        samples count (agents in the game), None: all."""
        log_prob, entropy, value = self.policy.evaluate(obs, actions, *states)
        if self.config.normalize_advantages:
            advantages = normalize(advantages, weight=weight)
        return loss(log_prob, entropy, value, old_log_probs, old_values, advantages, returns,
                    self.config, weight)
