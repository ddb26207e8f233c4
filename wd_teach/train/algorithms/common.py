"""What the algorithms share: advantages, normalisation, one optimiser step."""

from __future__ import annotations

import torch
from torch import nn

from wd_teach.ranges import require_number


def check_returns(config) -> None:
    """The discount and GAE's lambda: gamma in (0, 1] (0 would see no future, above 1 the
    returns grow without bound), lambda in [0, 1]."""
    require_number("algorithm.gamma", config.gamma, low=0, high=1, low_open=True)
    require_number("algorithm.gae_lambda", config.gae_lambda, low=0, high=1)


def check_loss_weights(config) -> None:
    """The loss's weights and the gradient clip: finite and not negative (a negative
    entropy weight would push the policy to collapse; max_grad_norm 0 means no clip)."""
    for key in ("value_coef", "entropy_coef", "max_grad_norm"):
        require_number(f"algorithm.{key}", getattr(config, key), low=0)


def gae(rewards: torch.Tensor, values: torch.Tensor, dones: torch.Tensor,
        last_values: torch.Tensor, gamma: float, lam: float):
    """Generalised advantage estimation (Schulman et al., 2016), backwards over the steps.

    All [steps, envs, agents] but `last_values` [envs, agents], the values after the last
    step. `dones[t]` = 1 where the episode ended with step t: nothing is carried back across
    it. `lam` = 1 gives the plain discounted return minus the value; `lam` = 0 the one-step
    TD error. Returns (advantages, returns = advantages + values), the critic's target.
    """
    alive = 1.0 - dones
    next_values = torch.cat([values[1:], last_values[None]])
    deltas = rewards + gamma * next_values * alive - values  # every step's TD error at once
    decay = (gamma * lam) * alive
    # The one part that must go step by step, backwards: a = delta + decay * a_next.
    advantages = torch.empty_like(rewards)
    carried = torch.zeros_like(last_values)
    for t in reversed(range(rewards.shape[0])):
        carried = torch.addcmul(deltas[t], decay[t], carried, out=advantages[t])
    return advantages, advantages + values


def episode_ends(batch) -> torch.Tensor:
    """Where each agent's episode ended, [steps, envs, agents]: where its env's did
    (`dones`), or where it left the game (`left`: a caught player), whichever first."""
    return batch.dones if batch.left is None else torch.maximum(batch.dones, batch.left)


def normalize(x: torch.Tensor, eps: float = 1e-8, weight: torch.Tensor | None = None):
    """Zero mean, unit spread: the step size then does not depend on the rewards' scale.
    `weight`: 1 for the samples that count, 0 for those that do not (agents out of the
    game), which then move neither the mean nor the spread."""
    if weight is None:
        return (x - x.mean()) / (x.std() + eps)
    count = weight.sum().clamp(min=2)
    mean = (x * weight).sum() / count
    spread = ((x - mean).pow(2) * weight).sum() / (count - 1)
    return (x - mean) / (spread.sqrt() + eps)


def gradient_step(optimizer: torch.optim.Optimizer, loss: torch.Tensor,
                  parameters, max_grad_norm: float | None, backward=None,
                  reduce=None) -> None:
    """Backpropagate `loss`, clip the gradients' global norm, step. No host round trip:
    the clip scales by min(1, max / norm) on the device. `backward(loss)` replaces
    `loss.backward()` where a framework wants to do it (Lightning's manual_backward).
    `reduce(parameters)`, if given, runs after the backward pass and before the clip: data
    parallel training averages the gradients over the GPUs there (wd_teach.scale.distributed)."""
    optimizer.zero_grad(set_to_none=True)
    (backward or torch.Tensor.backward)(loss)
    finish_step(optimizer, parameters, max_grad_norm, reduce)


def finish_step(optimizer: torch.optim.Optimizer, parameters, max_grad_norm: float | None,
                reduce=None) -> None:
    """After the backward pass(es): average over GPUs, clip, step."""
    parameters = list(parameters)
    if reduce is not None:
        reduce(parameters)
    if max_grad_norm:
        nn.utils.clip_grad_norm_(parameters, max_grad_norm)
    optimizer.step()


def chunks(steps: int, per_step: int, size: int) -> list[slice]:
    """The steps of a rollout in consecutive slices of about `size` samples (at least one
    step each): a large batch's forward and backward in parts, so the activations of only
    one part are in memory at a time. Slicing whole steps keeps each part a view of the
    buffer (an agent group's samples are not contiguous across steps). The gradients of
    the parts add up to the whole batch's when each loss is a sum / all samples."""
    every = max(1, size // max(per_step, 1))
    return [slice(start, min(start + every, steps)) for start in range(0, steps, every)]


def flat(batch_tensor: torch.Tensor, dims: int = 3) -> torch.Tensor:
    """[steps, envs, agents, ...] -> [samples, ...]."""
    return batch_tensor.reshape(-1, *batch_tensor.shape[dims:])
