"""Policies: actor-critic networks of nn.Linear layers, one per group of agents.

Agents of one role share one network (wd_teach/train/groups.py says who is in which group):
their observations are rows of one batch, so a step of many agents is a few products.

    CategoricalActorCritic   discrete actions in one or several heads (A2C, PPO)
    GaussianActorCritic      continuous actions: a Normal, learned mean and spread (A2C, PPO)
    DeterministicActorCritic an action and a critic Q(obs, a) (DDPG; noise.py explores)

By default the actor and the critic are two networks: their losses never pull one set of
weights two ways. With `shared=True` they share one body of hidden layers and differ in
their output layers alone (WarpDrive's model shape): about half the arithmetic.

With `state_size > 0` the critic is centralized (MAPPO, Yu et al., 2022): V(s, o_i) reads the
env's global state beside the agent's observation, while the actor reads o_i alone, so the
trained actors still play from their own observations.

This is the plain floor; wd_teach/fast/policy.py has a twin of each class: the same function
and parameters, in fewer kernels on a GPU.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import torch
from gymnasium import spaces
from torch import nn

from wd_teach.env import action_counts
from wd_teach.errors import ConfigError
from wd_teach.train.groups import AgentGroup, agent_groups  # noqa: F401 (their old home)
from wd_teach.train.noise import OUNoise  # noqa: F401 (its old home)

LOG_SQRT_2PI = 0.5 * math.log(2 * math.pi)


def layer(n_in: int, n_out: int, gain: float = math.sqrt(2), kind=nn.Linear) -> nn.Linear:
    """A linear layer with orthogonal weights of the given gain and zero biases: the start
    that keeps activations of a deep MLP at a steady size."""
    linear = kind(n_in, n_out)
    nn.init.orthogonal_(linear.weight, gain)
    nn.init.zeros_(linear.bias)
    return linear


#: The hidden layers' activation, by name (policies.NAME.activation).
ACTIVATIONS = {"tanh": nn.Tanh, "relu": nn.ReLU}


def hidden_layers(sizes: Sequence[int], activation: type[nn.Module] = nn.Tanh,
                  first: type[nn.Linear] = nn.Linear) -> list[nn.Module]:
    """Linear layers of `sizes` (the first of class `first`), each followed by `activation`."""
    layers: list[nn.Module] = []
    for n_in, n_out in zip(sizes[:-1], sizes[1:], strict=True):
        layers += [layer(n_in, n_out, kind=nn.Linear if layers else first), activation()]
    return layers


def mlp(sizes: Sequence[int], out: int, out_gain: float, activation: type[nn.Module] = nn.Tanh,
        first: type[nn.Linear] = nn.Linear, sequence: type[nn.Sequential] = nn.Sequential):
    """hidden_layers, then a linear output layer of `out` units, in a `sequence`."""
    return sequence(*hidden_layers(sizes, activation, first), layer(sizes[-1], out, out_gain))


class ActorCritic(nn.Module):
    """An actor with `actor_size` outputs and a critic with one, either as two networks of
    their own or as one shared body with two output layers (`shared`)."""

    #: The classes of the input layer and of a stack of layers. The fast floor's twins name
    #: their own: the same parameters and function, fewer kernels on a GPU.
    input_layer, sequence = nn.Linear, nn.Sequential

    def __init__(self, obs_size: int, actor_size: int, hidden: Sequence[int], *,
                 shared: bool = False, activation: str = "tanh", state_size: int = 0):
        super().__init__()
        kind, self.shared = ACTIVATIONS[activation], shared
        self.state_size = int(state_size)  # 0: an independent critic; else centralized
        if shared and self.state_size:
            raise ConfigError("a centralized critic reads the global state, which the actor "
                              "never sees, so the two share no body: pass shared=False.")
        kinds = {"first": self.input_layer, "sequence": self.sequence}
        if shared:
            self.body = self.sequence(*hidden_layers([obs_size, *hidden], kind, self.input_layer))
            self.actor = layer(hidden[-1], actor_size, 0.01)
            self.critic = layer(hidden[-1], 1, 1.0)
        else:
            self.body = nn.Identity()
            self.actor = mlp([obs_size, *hidden], actor_size, 0.01, kind, **kinds)
            critic_size = self.state_size + obs_size
            self.critic = mlp([critic_size, *hidden], 1, 1.0, kind, **kinds)

    def actor_and_value(self, obs: torch.Tensor, state: torch.Tensor | None = None):
        """The actor's output and the state value, a shared body run once for both. `state`:
        the global state, a row per agent, for a centralized critic (None: independent)."""
        features = self.body(obs)
        return self.actor(features), self.critic(self.critic_input(features, state)).squeeze(-1)

    def critic_input(self, features: torch.Tensor, state: torch.Tensor | None):
        """The body's features (an independent critic), or the global state followed by the
        observation (a centralized one, whose body is the identity)."""
        if not self.state_size:
            return features
        if state is None:
            raise ValueError("this policy's critic is centralized: give it the env's global "
                             "state (state=...) beside the observations.")
        return torch.cat([state, features], dim=-1)

    def value(self, obs: torch.Tensor, state: torch.Tensor | None = None) -> torch.Tensor:
        return self.critic(self.critic_input(self.body(obs), state)).squeeze(-1)

    def evaluate(self, obs: torch.Tensor, actions: torch.Tensor,
                 state: torch.Tensor | None = None):
        """(log-probability of `actions`, entropy, value): what the losses need."""
        out, value = self.actor_and_value(obs, state)
        return (*self.log_prob_and_entropy(out, actions), value)


class CategoricalActorCritic(ActorCritic):
    """Discrete actions in one or several heads, and a state value. The actor's output is
    every head's logits side by side; `probabilities` turns each head into a softmax, the
    layout the Sampler reads. Small initial actor weights make the first actions almost
    uniform."""

    def __init__(self, obs_size: int, num_actions: Sequence[int], hidden: Sequence[int], **body):
        counts = [int(n) for n in num_actions]
        super().__init__(obs_size, sum(counts), hidden, **body)
        self.num_actions = counts

    def logits(self, obs: torch.Tensor) -> torch.Tensor:
        return self.actor(self.body(obs))

    def per_head(self, logits: torch.Tensor) -> torch.Tensor | list[torch.Tensor]:
        """The logits per head: one [.., heads, n] view where the heads are of one size (so
        one kernel serves them all), else a list of the heads' [.., n_i]."""
        counts = self.num_actions
        if len(set(counts)) == 1:
            return logits.unflatten(-1, (len(counts), counts[0]))
        return list(logits.split(counts, dim=-1))

    def probabilities(self, logits: torch.Tensor) -> torch.Tensor:
        """Each head's softmax, side by side along the last axis."""
        heads = self.per_head(logits)
        if isinstance(heads, torch.Tensor):
            return torch.softmax(heads, dim=-1).flatten(-2)
        return torch.cat([torch.softmax(h, dim=-1) for h in heads], dim=-1)

    def log_softmax(self, logits: torch.Tensor) -> torch.Tensor | list[torch.Tensor]:
        """Each head's log-probabilities, in the form `per_head` gives."""
        heads = self.per_head(logits)
        if isinstance(heads, torch.Tensor):
            return torch.log_softmax(heads, dim=-1)
        return [torch.log_softmax(h, dim=-1) for h in heads]

    def log_prob(self, logits: torch.Tensor, actions: torch.Tensor, log_p=None) -> torch.Tensor:
        """log pi(actions), `actions` [.., heads] (long), heads added; `log_p`: if at hand."""
        log_p = self.log_softmax(logits) if log_p is None else log_p
        if isinstance(log_p, torch.Tensor):
            return log_p.gather(-1, actions.unsqueeze(-1)).squeeze(-1).sum(-1)
        return sum(h.gather(-1, actions[..., i:i + 1]).squeeze(-1) for i, h in enumerate(log_p))

    def entropy(self, logits: torch.Tensor, log_p=None) -> torch.Tensor:
        """The heads' entropies, added: -sum p log p, with p = exp(log p)."""
        log_p = self.log_softmax(logits) if log_p is None else log_p
        if isinstance(log_p, torch.Tensor):
            return -(log_p.exp() * log_p).sum((-2, -1))
        return sum(-(h.exp() * h).sum(-1) for h in log_p)

    def log_prob_and_entropy(self, logits: torch.Tensor, actions: torch.Tensor):
        """Both, from each head's log-softmax worked out once."""
        log_p = self.log_softmax(logits)
        return self.log_prob(logits, actions, log_p), self.entropy(logits, log_p)


class GaussianActorCritic(ActorCritic):
    """Continuous actions: a Normal(mean(obs), exp(log_std)) per action dimension, and a
    state value. The rollout clips what the env receives; the losses read the draw itself."""

    def __init__(self, obs_size: int, action_size: int, hidden: Sequence[int], log_std=0.0, **body):
        super().__init__(obs_size, action_size, hidden, **body)
        self.log_std = nn.Parameter(torch.full((action_size,), float(log_std)))

    def mean(self, obs: torch.Tensor) -> torch.Tensor:
        return self.actor(self.body(obs))

    def log_prob_and_entropy(self, mean: torch.Tensor, actions: torch.Tensor):
        """Each summed over the action's dimensions."""
        log_std = self.log_std.expand(actions.shape)
        log_prob = -0.5 * ((actions - mean) / log_std.exp()) ** 2 - log_std - LOG_SQRT_2PI
        entropy = (0.5 + LOG_SQRT_2PI + log_std).sum(-1)
        return log_prob.sum(-1), entropy


class DeterministicActorCritic(nn.Module):
    """DDPG's pair: an actor obs -> action, squashed into [low, high] by tanh, and a critic
    Q(obs, action). ReLU, as DDPG's authors used."""

    input_layer, sequence = nn.Linear, nn.Sequential  # as ActorCritic's

    def __init__(self, obs_size: int, action_size: int, hidden: Sequence[int],
                 low: Sequence[float], high: Sequence[float]):
        super().__init__()
        kinds = {"first": self.input_layer, "sequence": self.sequence}
        self.actor = mlp([obs_size, *hidden], action_size, 0.01, nn.ReLU, **kinds)
        self.critic = mlp([obs_size + action_size, *hidden], 1, 1.0, nn.ReLU, **kinds)
        low, high = (torch.as_tensor(np.asarray(v, np.float32)) for v in (low, high))
        self.register_buffer("middle", (high + low) / 2)
        self.register_buffer("half_range", (high - low) / 2)

    def action(self, obs: torch.Tensor) -> torch.Tensor:
        return self.middle + self.half_range * torch.tanh(self.actor(obs))

    def q(self, obs: torch.Tensor, action: torch.Tensor) -> torch.Tensor:
        return self.critic(torch.cat([obs, action], dim=-1)).squeeze(-1)


#: The classes make_policy makes: (discrete, continuous, deterministic); the fast floor's
#: twins are wd_teach.fast.policy.CLASSES.
CLASSES = (CategoricalActorCritic, GaussianActorCritic, DeterministicActorCritic)


def make_policy(kind: str, obs_size: int, action_space: spaces.Space, hidden: Sequence[int], *,
                shared: bool = False, activation: str | None = None, classes=CLASSES,
                state_size: int = 0, **options) -> nn.Module:
    """The policy of `kind` ('stochastic' or 'deterministic') for one agent's spaces.
    `shared`: one body for actor and critic; `activation`: the hidden layers' (None: tanh, or
    ReLU for DDPG's, as their authors used); `classes`: see CLASSES; `state_size`: the env's
    global state's size, for a centralized critic (0: an independent one)."""
    categorical, gaussian, deterministic = classes
    if kind == "deterministic":
        if state_size:
            raise ConfigError("a centralized critic is a state value V(s, o) for A2C or PPO; "
                              "DDPG's critic Q(o, a) reads the action. Use trainer.critic: "
                              "independent with DDPG.")
        if not isinstance(action_space, spaces.Box):
            raise ConfigError(f"DDPG needs continuous actions (a Box), but this environment's "
                              f"are {action_space}. Use algorithm.name: ppo or a2c.")
        if shared or activation not in (None, "relu"):
            raise ConfigError("DDPG's critic reads the action beside the observation, so it "
                              "shares no body with the actor, and its layers are ReLU: leave "
                              "policies.NAME.shared and .activation out with algorithm ddpg.")
        return deterministic(obs_size, int(np.prod(action_space.shape)), hidden,
                             action_space.low, action_space.high)
    body = {"shared": shared, "activation": activation or "tanh", "state_size": state_size}
    if isinstance(action_space, spaces.Box):
        return gaussian(obs_size, int(np.prod(action_space.shape)), hidden, **options, **body)
    return categorical(obs_size, action_counts(action_space), hidden, **body)
