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

from wd_teach.algorithms.common import (
    check_loss_weights,
    check_returns,
    chunks,
    finish_step,
    flat,
    gae,
    normalize,
)

#: The policy this algorithm trains: a distribution to sample from, and a critic.
POLICY = "stochastic"
#: Whether the rollout must keep each step's next observation (off-policy learners do).
NEEDS_NEXT_OBS = False
#: Whether the update reads the rollout's log-probabilities (A2C works them out anew).
NEEDS_LOG_PROBS = False
#: Whether the update can be recorded as a CUDA graph: device work only, no random numbers.
GRAPH_UPDATE = True


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


def check(config: Config, samples: int, policy: str) -> None:
    """Nothing to divide: A2C takes the whole batch at once."""


class Learner:
    #: The optimisers it steps, by attribute name (Lightning drives them from outside).
    optimizer_names = ("optimizer",)

    """One policy group's A2C: its network, its optimiser, its update."""

    def __init__(self, policy: torch.nn.Module, config: Config, lr: float,
                 generator: torch.Generator, capturable: bool = False):
        self.policy, self.config = policy, config
        # capturable: Adam keeps its step count on the device, so a CUDA graph can hold it
        self.optimizer = torch.optim.Adam(policy.parameters(), lr=lr, eps=1e-5,
                                          capturable=capturable)
        self.backward = None  # None: loss.backward()
        self.reduce = None  # None: these gradients alone (one GPU)
        self.chunk = 1 << 20  # samples per forward/backward part

    def update(self, batch) -> dict[str, torch.Tensor]:
        c = self.config
        advantages, returns = gae(batch.rewards, batch.values, batch.dones, batch.last_values,
                                  c.gamma, c.gae_lambda)
        if c.normalize_advantages:
            advantages = normalize(advantages)
        steps, samples = advantages.shape[0], advantages.numel()

        self.optimizer.zero_grad(set_to_none=True)
        sums = torch.zeros(4, device=advantages.device)
        for part in chunks(steps, samples // steps, self.chunk):
            log_prob, entropy, value = self.policy.evaluate(flat(batch.obs[part]),
                                                            flat(batch.actions[part]))
            # The A2C loss: policy gradient, critic regression, entropy bonus (means over
            # the whole batch, taken part by part).
            policy_loss = -(flat(advantages[part]) * log_prob).sum() / samples
            value_loss = 0.5 * (flat(returns[part]) - value).pow(2).sum() / samples
            entropy = entropy.sum() / samples
            loss = policy_loss + c.value_coef * value_loss - c.entropy_coef * entropy
            (self.backward or torch.Tensor.backward)(loss)
            sums += torch.stack([loss, policy_loss, value_loss, entropy]).detach()
        finish_step(self.optimizer, self.policy.parameters(), c.max_grad_norm, self.reduce)
        return dict(zip(("loss", "policy_loss", "value_loss", "entropy"), sums, strict=True))

    def state_dict(self) -> dict:
        return {"policy": self.policy.state_dict(), "optimizer": self.optimizer.state_dict()}

    def load_state_dict(self, state: dict) -> None:
        self.policy.load_state_dict(state["policy"])
        self.optimizer.load_state_dict(state["optimizer"])
