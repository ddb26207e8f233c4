"""DDPG's exploration: noise added to a deterministic actor's action while it acts."""

from __future__ import annotations

from collections.abc import Sequence

import torch


class OUNoise:
    """Ornstein-Uhlenbeck noise, one process per (env, agent, action dimension), on the
    device: x += theta * (0 - x) + sigma * N(0, 1). Successive values are correlated, so an
    explored action drifts instead of jittering. `reset(done)` restarts finished envs' at 0."""

    def __init__(self, shape: Sequence[int], device: torch.device, generator: torch.Generator,
                 theta: float = 0.15, sigma: float = 0.2):
        self.theta, self.sigma, self.generator = float(theta), float(sigma), generator
        self.state = torch.zeros(tuple(shape), device=device)

    def sample(self) -> torch.Tensor:
        shock = torch.randn(self.state.shape, generator=self.generator, device=self.state.device)
        self.state.add_(self.sigma * shock - self.theta * self.state)
        return self.state

    def reset(self, done: torch.Tensor) -> None:
        """done: [envs] bool."""
        self.state.mul_((~done).to(self.state.dtype).view(-1, *([1] * (self.state.dim() - 1))))
