"""DDPG: deep deterministic policy gradient (Lillicrap et al., 2016), continuous actions.

The actor maps an observation to one action; the critic Q(obs, action) learns how good
that is from one-step targets r + gamma * Q'(next obs, actor'(next obs)), where the primed
networks are slowly moving copies (target networks, updated by Polyak averaging) so that
the target does not chase itself. The actor climbs the critic: it maximises Q(obs,
actor(obs)). Experience goes into a replay buffer, on the device like everything else,
and each update samples minibatches from it, so old experience is learnt from again.
Exploration is the rollout's: Ornstein-Uhlenbeck noise on the actor's action.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass

import torch

from wd_teach.errors import ConfigError
from wd_teach.ranges import require_number, require_whole
from wd_teach.train.algorithms.base import Capabilities, LearnerBase, LearnerOptions
from wd_teach.train.algorithms.common import flat, gradient_step

#: An actor and a Q critic, off-policy: the rollout keeps each next observation, and the
#: actor explores with Ornstein-Uhlenbeck noise. Its replay draws from a torch generator,
#: so the update runs step by step.
CAPABILITIES = Capabilities(policy="deterministic", next_obs=True, log_probs=False,
                            exploration_noise=True)


@dataclass(frozen=True)
class Config:
    gamma: float = 0.99
    tau: float = 0.005  # how far the target networks move towards the trained ones per step
    batch_size: int = 256  # transitions per gradient step
    replay_size: int = 100_000  # transitions kept; a multiple of one iteration's
    updates_per_iteration: int = 16  # gradient steps per rollout
    learning_starts: int = 1_000  # transitions in the buffer before the first step
    critic_lr: float | None = None  # None: trainer.lr
    max_grad_norm: float = 0.0  # 0: no clip
    noise_theta: float = 0.15  # Ornstein-Uhlenbeck pull back to 0 per step
    noise_sigma: float = 0.2  # its shock per step, in units of half the action range


def check_ranges(config: Config) -> None:
    """Each hyperparameter in its range, before anything is built: NaN, infinity or a
    value out of range would otherwise train quietly to NaN."""
    require_number("algorithm.gamma", config.gamma, low=0, high=1, low_open=True)
    require_number("algorithm.tau", config.tau, low=0, high=1, low_open=True)
    for key in ("batch_size", "replay_size"):
        require_whole(f"algorithm.{key}", getattr(config, key), low=1)
    for key in ("updates_per_iteration", "learning_starts"):
        require_whole(f"algorithm.{key}", getattr(config, key), low=0)
    if config.critic_lr is not None:
        require_number("algorithm.critic_lr", config.critic_lr, low=0, low_open=True)
    for key in ("max_grad_norm", "noise_theta", "noise_sigma"):
        require_number(f"algorithm.{key}", getattr(config, key), low=0)


def check(config: Config, samples: int, policy: str, *, steps: int) -> None:
    """The replay buffer is a ring of whole rollouts: its size must be a multiple of one
    iteration's transitions, and hold a batch."""
    if config.replay_size % samples:
        raise ConfigError(f"algorithm.replay_size={config.replay_size:,} is not a multiple of "
                          f"the {samples:,} transitions policy {policy!r} adds per iteration "
                          f"(steps x envs x its agents). Use, e.g., "
                          f"{max(1, round(config.replay_size / samples)) * samples:,}.")
    if config.batch_size > config.replay_size:
        raise ConfigError(f"algorithm.batch_size={config.batch_size:,} is larger than "
                          f"algorithm.replay_size={config.replay_size:,}.")


class ReplayBuffer:
    """A ring of transitions on the device. Where to write next and how full it is are
    host integers: they follow from how many transitions went in, so reading them needs
    no trip to the device."""

    def __init__(self, capacity: int, obs_size: int, action_size: int, device):
        self.capacity, self.position, self.size = capacity, 0, 0
        self.obs = torch.zeros(capacity, obs_size, device=device)
        self.actions = torch.zeros(capacity, action_size, device=device)
        self.rewards = torch.zeros(capacity, device=device)
        self.next_obs = torch.zeros(capacity, obs_size, device=device)
        self.terminals = torch.zeros(capacity, device=device)

    def add(self, **transitions: torch.Tensor) -> None:
        count = next(iter(transitions.values())).shape[0]
        for name, values in transitions.items():
            getattr(self, name)[self.position:self.position + count] = values
        self.position = (self.position + count) % self.capacity
        self.size = min(self.size + count, self.capacity)

    def sample(self, batch_size: int, generator: torch.Generator):
        i = torch.randint(self.size, (batch_size,), generator=generator,
                          device=self.obs.device)
        return self.obs[i], self.actions[i], self.rewards[i], self.next_obs[i], self.terminals[i]

    def state_dict(self) -> dict:
        state = {name: value.clone() for name, value in vars(self).items()
                 if isinstance(value, torch.Tensor)}
        return {**state, "position": self.position, "size": self.size}

    def load_state_dict(self, state: dict) -> None:
        for name, value in state.items():
            mine = getattr(self, name)
            if isinstance(mine, torch.Tensor):
                mine.copy_(value)
            else:
                setattr(self, name, value)


def soft_update(target: torch.nn.Module, source: torch.nn.Module, tau: float) -> None:
    """target <- (1 - tau) * target + tau * source, parameter by parameter."""
    with torch.no_grad():
        for mine, theirs in zip(target.parameters(), source.parameters(), strict=True):
            mine.lerp_(theirs, tau)


def critic_loss(policy, target, obs, action, reward, next_obs, terminal, gamma: float):
    """Regress Q(s, a) onto the one-step target r + gamma * Q'(s', actor'(s'))."""
    with torch.no_grad():
        next_q = target.q(next_obs, target.action(next_obs))
        wanted = reward + gamma * (1 - terminal) * next_q
    return (policy.q(obs, action) - wanted).pow(2).mean()


def actor_loss(policy, obs):
    """The actor climbs the critic: maximise Q(s, actor(s))."""
    return -policy.q(obs, policy.action(obs)).mean()


class Learner(LearnerBase):
    """One policy group's DDPG: replayed minibatches, target networks."""

    optimizer_names = ("actor_optimizer", "critic_optimizer")

    def __init__(self, policy: torch.nn.Module, config: Config, options: LearnerOptions):
        super().__init__(policy, config, options)
        self.target = copy.deepcopy(policy).requires_grad_(False)
        self.actor_optimizer = self.adam(policy.actor.parameters(), options.lr)
        self.critic_optimizer = self.adam(policy.critic.parameters(),
                                          config.critic_lr or options.lr)
        obs_size = policy.actor[0].in_features
        action_size = policy.actor[-1].out_features
        self.replay = ReplayBuffer(config.replay_size, obs_size, action_size,
                                   policy.middle.device)

    def update(self, batch) -> dict[str, torch.Tensor]:
        c, policy = self.config, self.policy
        self.replay.add(obs=flat(batch.obs), actions=flat(batch.actions),
                        rewards=flat(batch.rewards), next_obs=flat(batch.next_obs),
                        terminals=flat(batch.terminals))
        sums = torch.zeros(2, device=self.replay.obs.device)
        steps = c.updates_per_iteration if self.replay.size >= c.learning_starts else 0
        for _ in range(steps):
            obs, action, reward, next_obs, terminal = self.replay.sample(c.batch_size,
                                                                         self.generator)
            value_loss = critic_loss(policy, self.target, obs, action, reward, next_obs,
                                     terminal, c.gamma)
            gradient_step(self.critic_optimizer, value_loss, policy.critic.parameters(),
                          c.max_grad_norm, self.backward, self.reduce)
            policy_loss = actor_loss(policy, obs)
            gradient_step(self.actor_optimizer, policy_loss, policy.actor.parameters(),
                          c.max_grad_norm, self.backward, self.reduce)
            soft_update(self.target, policy, c.tau)
            sums += torch.stack([value_loss, policy_loss]).detach()
        means = sums / max(steps, 1) if steps else torch.full_like(sums, float("nan"))
        return {"value_loss": means[0], "policy_loss": means[1]}

    def extra_state(self) -> dict:
        return {"target": self.target.state_dict(), "replay": self.replay.state_dict()}

    def load_extra_state(self, state: dict) -> None:
        self.target.load_state_dict(state["target"])
        self.replay.load_state_dict(state["replay"])
