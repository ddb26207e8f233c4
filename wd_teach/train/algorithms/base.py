"""What every algorithm is to the trainer: one record of what it can do, and a Learner base
that owns the parts they share.

An algorithm module (a2c.py, ppo.py, ddpg.py) holds, top to bottom: its `CAPABILITIES`, its
`Config` of hyperparameters, `check_ranges(config)` and `check(config, samples, policy,
steps=...)` (clear errors before anything is built), its loss, and a
`Learner(LearnerBase)` whose `update(batch)` turns a rollout into gradient steps. The
trainer reads `CAPABILITIES` and nothing else about the module: no flag is looked up with a
default.

LearnerBase keeps a policy and its optimisers, and the two hooks a driver from outside
sets: `backward` (Lightning's manual_backward instead of loss.backward()) and `reduce` (the
data-parallel path averages gradients over the GPUs before each step). Its state dict is
the policy, every optimiser and whatever `extra_state()` adds (DDPG: targets, replay).
"""

from __future__ import annotations

import abc
from dataclasses import dataclass

import torch


@dataclass(frozen=True)
class Capabilities:
    """What an algorithm needs and can do, read by the trainer in one place."""

    #: The policy it trains: "stochastic" (a distribution and a critic) or "deterministic"
    #: (an actor and a Q critic).
    policy: str
    #: Whether its update is device work on fixed memory with no host random numbers, so a
    #: CUDA graph can record it and replay it (then its optimiser is made capturable).
    graph_update: bool = False
    #: Whether the rollout must keep each step's next observation (off-policy learners).
    next_obs: bool = False
    #: Whether the update reads the rollout's log-probabilities (A2C works them out anew).
    log_probs: bool = True
    #: Whether it explores with Ornstein-Uhlenbeck noise on a deterministic action; its
    #: Config then has noise_theta and noise_sigma.
    exploration_noise: bool = False
    #: Whether its update runs a large batch's forward and backward in parts of
    #: trainer.chunk_samples samples (only one part's activations in memory at a time).
    chunked_update: bool = False


def together(capabilities) -> Capabilities:
    """What a rollout must do for several groups, each with its own algorithm (of one kind of
    policy): keep what any of them reads, record the update as a graph only if all can."""
    capabilities = list(capabilities)
    first = capabilities[0]
    return Capabilities(
        policy=first.policy,
        graph_update=all(c.graph_update for c in capabilities),
        next_obs=any(c.next_obs for c in capabilities),
        log_probs=any(c.log_probs for c in capabilities),
        exploration_noise=any(c.exploration_noise for c in capabilities),
        chunked_update=all(c.chunked_update for c in capabilities))


@dataclass(frozen=True)
class LearnerOptions:
    """What the trainer hands every learner besides its policy and config."""

    lr: float
    generator: torch.Generator
    capturable: bool = False  # optimisers that a CUDA graph can record (graph_update)
    chunk_samples: int = 1 << 20  # samples per forward/backward part (chunked_update)


class LearnerBase(abc.ABC):
    """One policy group's learner: its network, its optimisers, its update (which every
    algorithm writes: a learner without one cannot be made)."""

    #: The optimisers it steps, by attribute name (Lightning drives them from outside).
    optimizer_names: tuple[str, ...] = ("optimizer",)

    def __init__(self, policy: torch.nn.Module, config, options: LearnerOptions):
        self.policy, self.config, self.options = policy, config, options
        self.generator = options.generator
        self.backward = None  # None: loss.backward()
        self.reduce = None  # None: these gradients alone (one GPU)

    def adam(self, parameters, lr: float, **settings) -> torch.optim.Adam:
        """An Adam optimiser, capturable where the update is recorded as a CUDA graph:
        then it keeps its step count on the device. A run with graphs off makes it
        capturable too, so both round alike and agree bit for bit."""
        return torch.optim.Adam(parameters, lr=lr, capturable=self.options.capturable,
                                **settings)

    @abc.abstractmethod
    def update(self, batch) -> dict[str, torch.Tensor]:
        """Gradient steps from one rollout's batch; the losses, as device tensors."""

    def prepare(self, batch) -> None:  # noqa: B027 (a hook, empty by default)
        """Host-side work before an update, outside any CUDA graph: the trainer calls it
        just before each update, recorded or not (PPO draws its minibatch orders here)."""

    def optimizers(self) -> dict[str, torch.optim.Optimizer]:
        return {name: getattr(self, name) for name in self.optimizer_names}

    def extra_state(self) -> dict:
        """What else a checkpoint must hold to go on exactly (none by default)."""
        return {}

    def load_extra_state(self, state: dict) -> None:  # noqa: B027 (a hook, empty by default)
        """Put back what `extra_state` returned (nothing by default)."""

    def state_dict(self) -> dict:
        optimizers = {name: opt.state_dict() for name, opt in self.optimizers().items()}
        return {"policy": self.policy.state_dict(), **optimizers, **self.extra_state()}

    def load_state_dict(self, state: dict) -> None:
        self.policy.load_state_dict(state["policy"])
        for name, optimizer in self.optimizers().items():
            optimizer.load_state_dict(state[name])
        self.load_extra_state({k: v for k, v in state.items()
                               if k != "policy" and k not in self.optimizer_names})
