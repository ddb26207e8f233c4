"""What the algorithms share: advantages, normalisation, one optimiser step."""

from __future__ import annotations

import torch
from torch import nn


def gae(rewards: torch.Tensor, values: torch.Tensor, dones: torch.Tensor,
        last_values: torch.Tensor, gamma: float, lam: float):
    """Generalised advantage estimation (Schulman et al., 2016), backwards over the steps.

    All [steps, envs, agents] but `last_values` [envs, agents], the values after the last
    step. `dones[t]` = 1 where the episode ended with step t: nothing is carried back across
    it. `lam` = 1 gives the plain discounted return minus the value; `lam` = 0 the one-step
    TD error. Returns (advantages, returns = advantages + values), the critic's target.
    """
    advantages = torch.empty_like(rewards)
    carried = torch.zeros_like(last_values)
    next_values = last_values
    for t in reversed(range(rewards.shape[0])):
        alive = 1.0 - dones[t]
        delta = rewards[t] + gamma * next_values * alive - values[t]
        carried = delta + gamma * lam * alive * carried
        advantages[t] = carried
        next_values = values[t]
    return advantages, advantages + values


def normalize(x: torch.Tensor, eps: float = 1e-8) -> torch.Tensor:
    """Zero mean, unit spread: the step size then does not depend on the rewards' scale."""
    return (x - x.mean()) / (x.std() + eps)


def gradient_step(optimizer: torch.optim.Optimizer, loss: torch.Tensor,
                  parameters, max_grad_norm: float | None, backward=None) -> None:
    """Backpropagate `loss`, clip the gradients' global norm, step. No host round trip:
    the clip scales by min(1, max / norm) on the device. `backward(loss)` replaces
    `loss.backward()` where a framework wants to do it (Lightning's manual_backward)."""
    optimizer.zero_grad(set_to_none=True)
    if backward is None:
        loss.backward()
    else:
        backward(loss)
    if max_grad_norm:
        nn.utils.clip_grad_norm_(parameters, max_grad_norm)
    optimizer.step()


def flat(batch_tensor: torch.Tensor, dims: int = 3) -> torch.Tensor:
    """[steps, envs, agents, ...] -> [samples, ...]."""
    return batch_tensor.reshape(-1, *batch_tensor.shape[dims:])
