"""Acting: from observations to every agent's action in the store, in two phases.

    forward(obs, values, state)  the policy: each group's network on its agents'
                           observations, giving what the actions are drawn from (and the
                           critic's values; a centralized critic reads the global `state`)
    draw(actions, logp)    the sampling: an action per agent, written into the store's
                           `actions` for the env's step, and into the rollout buffer

How the draw happens depends on the policy's kind:

    CategoricalActing  discrete heads: the groups write probabilities into the Sampler's
                       buffer, and one Sampler launch draws for every agent of every env
                       (on the NumPy backend, its reference twin draws the same numbers)
    GaussianActing     continuous: mean + std * N(0, 1), drawn by torch on the device and
                       clipped to the action space for the env
    NoisyActing        DDPG: the actor's action plus Ornstein-Uhlenbeck noise, clipped

`greedy()` replaces `draw` in evaluation: the most probable action, the mean, or the
actor's action without noise. Nothing here reads a value on the host.
"""

from __future__ import annotations

import numpy as np
import torch
from gymnasium import spaces
from torch import nn

from wd_teach.env import ACTIONS
from wd_teach.sampler.reference import ReferenceSampler
from wd_teach.sampler.sampler import Sampler
from wd_teach.train.noise import OUNoise
from wd_teach.train.policy import (
    LOG_SQRT_2PI,
    CategoricalActorCritic,
    DeterministicActorCritic,
    GaussianActorCritic,
    action_counts,
)


class Acting:
    """What the three kinds share: the env, the groups and their policies."""

    #: Whether a rollout with this acting can be recorded as a CUDA graph: its random
    #: numbers come from counters in device memory (the Sampler), not from a torch
    #: generator whose state the host keeps.
    graph_safe = False

    def __init__(self, wrapper, groups, policies):
        self.wrapper, self.groups, self.policies = wrapper, groups, policies
        self.store = wrapper.store
        self.device = wrapper.device

    @property
    def pairs(self):
        return zip(self.groups, self.policies, strict=True)

    @staticmethod
    def actor_and_value(policy, group, obs, state):
        """`policy`'s actor output and values for `obs`, its group's observations; with a
        centralized critic, of the env's global `state` [envs, size] too, as one row per
        agent of the group (an expanded view: every agent of an env sees the same state)."""
        if state is None:
            return policy.actor_and_value(obs)
        return policy.actor_and_value(obs, state[:, None].expand(-1, group.size, -1))

    def action_width(self) -> int:
        """The last axis of the rollout buffer's actions: heads, or action dimensions."""
        raise NotImplementedError

    def action_dtype(self) -> torch.dtype:
        return torch.float32

    def after_step(self, done: torch.Tensor) -> None:
        """Called after each env step, before the reset (noise processes restart here)."""

    def state_dict(self) -> dict:
        return {}

    def load_state_dict(self, state: dict) -> None:
        pass


class CategoricalActing(Acting):
    graph_safe = True

    def __init__(self, wrapper, groups, policies, seed: int):
        super().__init__(wrapper, groups, policies)
        counts = action_counts(wrapper.action_space)
        if wrapper.backend.runs_kernels:
            self.sampler = Sampler(self.store, counts, backend=wrapper.backend, seed=seed,
                                   checked=False)  # softmax output: probabilities by make
        else:
            self.sampler = ReferenceSampler(self.store, counts, seed=seed)
        self.heads, self.counts = len(counts), counts
        # where a group's role chooses from fewer actions (Env.role_action_spaces): its own
        self.own_counts = {g.name: action_counts(g.action_space) for g in groups
                           if g.action_space is not None}
        self.logits: list[torch.Tensor] = []

    def action_width(self) -> int:
        return self.heads

    def action_dtype(self) -> torch.dtype:
        return torch.long

    def forward(self, obs, values=None, state=None):
        self.logits = []
        for group, policy in self.pairs:
            mine = group.observe(obs, 1)
            if values is None:
                logits = policy.logits(mine)
            else:
                logits, value = self.actor_and_value(policy, group, mine, state)
                group.put(values, 1, value)
            group.put(self.sampler.probs, 1, self.widen(group, policy.probabilities(logits)))
            self.logits.append(logits)

    def widen(self, group, probs: torch.Tensor) -> torch.Tensor:
        """A group's probabilities laid out as the sampler's heads: where its role chooses
        from fewer actions (Env.role_action_spaces), the ones it lacks get probability 0
        (the sampler never draws an action of probability 0). Else `probs` itself."""
        own = self.own_counts.get(group.name)
        if own is None:
            return probs
        heads = probs.split(own, dim=-1)
        return torch.cat([nn.functional.pad(head, (0, widest - mine))
                          for head, mine, widest in zip(heads, own, self.counts, strict=True)],
                         dim=-1)

    def draw(self, actions, log_probs):
        drawn = self.sampler.sample().view(actions.shape)  # one launch for every agent
        actions.copy_(drawn)
        if log_probs is None:  # not wanted (A2C works them out in its update)
            return
        for (group, policy), logits in zip(self.pairs, self.logits, strict=True):
            group.put(log_probs, 1, policy.log_prob(logits, group.take(actions, 1)))

    def greedy(self):
        self.sampler.argmax()


class GaussianActing(Acting):
    def __init__(self, wrapper, groups, policies, generator: torch.Generator):
        super().__init__(wrapper, groups, policies)
        space = wrapper.action_space
        shape = (wrapper.num_envs, wrapper.num_agents, int(np.prod(space.shape)))
        self.mean = torch.zeros(shape, device=self.device)
        self.log_std = torch.zeros(shape, device=self.device)
        self.low = torch.as_tensor(space.low, device=self.device)
        self.high = torch.as_tensor(space.high, device=self.device)
        self.generator = generator

    def action_width(self) -> int:
        return self.mean.shape[-1]

    def forward(self, obs, values=None, state=None):
        for group, policy in self.pairs:
            mine = group.observe(obs, 1)
            if values is None:
                mean = policy.mean(mine)
            else:
                mean, value = self.actor_and_value(policy, group, mine, state)
                group.put(values, 1, value)
            group.put(self.mean, 1, mean)
            group.put(self.log_std, 1, policy.log_std.expand(mine.shape[0], group.size, -1))

    def draw(self, actions, log_probs):
        noise = torch.randn(self.mean.shape, generator=self.generator, device=self.device)
        torch.addcmul(self.mean, self.log_std.exp(), noise, out=actions)
        if log_probs is not None:
            log_probs.copy_((-0.5 * noise * noise - self.log_std - LOG_SQRT_2PI).sum(-1))
        torch.clamp(actions, self.low, self.high, out=self.store[ACTIONS])

    def greedy(self):
        torch.clamp(self.mean, self.low, self.high, out=self.store[ACTIONS])

    def state_dict(self):
        return {"generator": self.generator.get_state()}

    def load_state_dict(self, state):
        self.generator.set_state(state["generator"])


class NoisyActing(Acting):
    def __init__(self, wrapper, groups, policies, generator: torch.Generator,
                 theta: float, sigma: float):
        super().__init__(wrapper, groups, policies)
        space = wrapper.action_space
        shape = (wrapper.num_envs, wrapper.num_agents, int(np.prod(space.shape)))
        self.action = torch.zeros(shape, device=self.device)
        self.low = torch.as_tensor(space.low, device=self.device)
        self.high = torch.as_tensor(space.high, device=self.device)
        self.noise = OUNoise(shape, self.device, generator, theta, sigma)
        self.generator = generator

    def action_width(self) -> int:
        return self.action.shape[-1]

    def forward(self, obs, values=None, state=None):
        for group, policy in self.pairs:
            group.put(self.action, 1, policy.action(group.observe(obs, 1)))

    def draw(self, actions, log_probs):
        scale = (self.high - self.low) / 2  # noise in units of the action range
        torch.clamp(self.action + scale * self.noise.sample(), self.low, self.high,
                    out=actions)
        self.store[ACTIONS].copy_(actions)

    def greedy(self):
        self.store[ACTIONS].copy_(self.action)

    def after_step(self, done):
        self.noise.reset(done)

    def state_dict(self):
        return {"generator": self.generator.get_state(), "noise": self.noise.state.clone()}

    def load_state_dict(self, state):
        self.generator.set_state(state["generator"])
        self.noise.state.copy_(state["noise"])


#: Ornstein-Uhlenbeck noise (theta, sigma) of a deterministic policy whose algorithm
#: names none (an evaluation, say).
DEFAULT_NOISE = (0.15, 0.2)


def make_acting(wrapper, groups, policies, seed: int, generator: torch.Generator,
                noise: tuple[float, float] | None = None) -> Acting:
    """The acting that fits the policies' kind (they all have the same kind: one env, one
    action space). `noise`: (theta, sigma) of a deterministic policy's exploration."""
    first = policies[0]
    if isinstance(first, CategoricalActorCritic):
        return CategoricalActing(wrapper, groups, policies, seed)
    if isinstance(first, GaussianActorCritic):
        return GaussianActing(wrapper, groups, policies, generator)
    if isinstance(first, DeterministicActorCritic):
        return NoisyActing(wrapper, groups, policies, generator, *(noise or DEFAULT_NOISE))
    raise TypeError(f"no acting for a {type(first).__name__}")


def random_actions(wrapper, group, generator: torch.Generator) -> None:
    """Uniformly random actions for `group`'s agents, into the store: the baseline a
    trained policy is compared with. A role with its own action space
    (Env.role_action_spaces) draws from its own choices."""
    if group.action_space is None:
        drawn = group.take(wrapper.random_actions(generator), 1)
    else:
        counts = torch.tensor(action_counts(group.action_space), device=wrapper.device)
        heads = (len(counts),) if isinstance(group.action_space, spaces.MultiDiscrete) else ()
        uniform = torch.rand((wrapper.num_envs, group.size, *heads), generator=generator,
                             device=wrapper.device)
        drawn = torch.minimum((uniform * counts).floor(), counts - 1).to(torch.int32)
    group.put(wrapper.store[ACTIONS], 1, drawn)
