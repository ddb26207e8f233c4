"""A2C: advantage actor-critic (Mnih et al., 2016, in its synchronous form).

One rollout, one gradient step. The actor raises the log-probability of each action in
proportion to its advantage (how much better it turned out than the critic expected);
the critic regresses onto the returns; an entropy bonus keeps the policy from settling
too early. With thousands of envs the batch is large, so one step per rollout is enough.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from wd_teach.algorithms.common import flat, gae, gradient_step, normalize

#: The policy this algorithm trains: a distribution to sample from, and a critic.
POLICY = "stochastic"
#: Whether the rollout must keep each step's next observation (off-policy learners do).
NEEDS_NEXT_OBS = False


@dataclass(frozen=True)
class Config:
    gamma: float = 0.99  # discount per step
    gae_lambda: float = 1.0  # 1: n-step returns over the whole rollout
    value_coef: float = 0.5  # weight of the critic's loss
    entropy_coef: float = 0.01  # weight of the entropy bonus
    max_grad_norm: float = 0.5  # clip the gradient's global norm to this (0: no clip)
    normalize_advantages: bool = False


def check(config: Config, samples: int, policy: str) -> None:
    """Nothing to divide: A2C takes the whole batch at once."""


class Learner:
    #: The optimisers it steps, by attribute name (Lightning drives them from outside).
    optimizer_names = ("optimizer",)

    """One policy group's A2C: its network, its optimiser, its update."""

    def __init__(self, policy: torch.nn.Module, config: Config, lr: float,
                 generator: torch.Generator):
        self.policy, self.config = policy, config
        self.optimizer = torch.optim.Adam(policy.parameters(), lr=lr, eps=1e-5)
        self.backward = None  # None: loss.backward()

    def update(self, batch) -> dict[str, torch.Tensor]:
        c = self.config
        advantages, returns = gae(batch.rewards, batch.values, batch.dones, batch.last_values,
                                  c.gamma, c.gae_lambda)
        advantages, returns = flat(advantages), flat(returns)
        if c.normalize_advantages:
            advantages = normalize(advantages)
        log_prob, entropy, value = self.policy.evaluate(flat(batch.obs), flat(batch.actions))

        # The A2C loss: policy gradient, critic regression, entropy bonus.
        policy_loss = -(advantages * log_prob).mean()
        value_loss = 0.5 * (returns - value).pow(2).mean()
        loss = policy_loss + c.value_coef * value_loss - c.entropy_coef * entropy.mean()

        gradient_step(self.optimizer, loss, self.policy.parameters(), c.max_grad_norm,
                              self.backward)
        return {"loss": loss.detach(), "policy_loss": policy_loss.detach(),
                "value_loss": value_loss.detach(), "entropy": entropy.mean().detach()}

    def state_dict(self) -> dict:
        return {"policy": self.policy.state_dict(), "optimizer": self.optimizer.state_dict()}

    def load_state_dict(self, state: dict) -> None:
        self.policy.load_state_dict(state["policy"])
        self.optimizer.load_state_dict(state["optimizer"])
