"""The rollout: policy -> sampler -> env step -> reset of done envs, with no host round trip.

Every algorithm learns from the same thing: `steps` steps of every agent of every env,
kept in a RolloutBuffer made once, on the device, shaped [steps, envs, agents, ...]. The
loop that fills it (`Rollout.collect`) is the heart of end-to-end GPU RL, so it is short and
has no `.item()`, `.cpu()`, `.tolist()` or print of a tensor in it: each of those would wait
for the GPU and copy. The policy's output, the actions, the env's state, the rewards and the
done flags stay in device memory from the first step to the update; the host only queues
kernels. (On the NumPy backend, "the device" is the CPU, and the same loop runs there.)

The env is stepped without its automatic reset, and the loop resets finished envs itself,
after it has recorded what the finished episodes ended with: the observation an off-policy
learner needs as the next state, and the env's own episode metrics (Env.episode_metrics).

On a GPU the whole rollout is recorded as one CUDA graph after its first run and replayed
from then on (wd_teach/train/speed.py): the same kernels on the same memory, launched by the
driver instead of by Python, one call for the hundred steps. A profiled rollout (the
time breakdown) runs step by step, as written below.
"""

from __future__ import annotations

from contextlib import nullcontext
from dataclasses import dataclass

import torch

from wd_teach.train.metrics import EpisodeStats, PhaseTimer
from wd_teach.train.speed import maybe_graphed, precision_context


@dataclass
class Batch:
    """One group's part of a rollout: [steps, envs, agents of the group, ...].

    `dones[t]` is 1 where the episode ended with step t (then no value is carried back
    across it); `last_values` are the critic's values of the observation after the last
    step, to bootstrap from. `next_obs` and `terminals` are there for off-policy learners:
    the observation after each step (before any reset) and whether the episode ended by the
    env's rules (1) rather than by running out of time (0). `states` is there for a
    centralized critic: the env's global state at each step, the same for every agent of an
    env (an expanded view, [steps, envs, agents, state_size], that takes no memory).
    `active` and `left` are there in a game that agents leave mid-episode (a caught player;
    Env.agents_in_game): 1 where the agent was in the game when it acted at step t, and
    1 where step t was its last in the game. The learners count only the active samples,
    and treat leaving as the end of that agent's episode.
    """

    obs: torch.Tensor
    actions: torch.Tensor
    log_probs: torch.Tensor
    values: torch.Tensor
    rewards: torch.Tensor
    dones: torch.Tensor
    last_values: torch.Tensor
    next_obs: torch.Tensor | None = None
    terminals: torch.Tensor | None = None
    states: torch.Tensor | None = None
    active: torch.Tensor | None = None
    left: torch.Tensor | None = None


class RolloutBuffer:
    """Every tensor a rollout fills, made once on the device."""

    def __init__(self, steps: int, num_envs: int, num_agents: int, obs_size: int,
                 action_width: int, action_dtype: torch.dtype, device: torch.device,
                 next_obs: bool = False, metrics=(), state_size: int = 0,
                 departures: bool = False):
        per_agent = (steps, num_envs, num_agents)
        zeros = lambda shape, dtype=torch.float32: torch.zeros(shape, dtype=dtype,
                                                               device=device)
        self.steps = steps
        self.obs = zeros((*per_agent, obs_size))
        self.actions = zeros((*per_agent, action_width), action_dtype)
        self.log_probs = zeros(per_agent)
        self.values = zeros(per_agent)
        self.rewards = zeros(per_agent)
        self.dones = zeros((steps, num_envs))
        self.last_values = zeros((num_envs, num_agents))
        self.next_obs = zeros((*per_agent, obs_size)) if next_obs else None
        self.terminals = zeros((steps, num_envs)) if next_obs else None
        # The global state once per env, not per agent: a centralized critic's input.
        self.states = zeros((steps, num_envs, state_size)) if state_size else None
        self.metrics = {name: zeros((steps, num_envs)) for name in metrics}  # per env, per step
        # In a game that agents leave: who was in it at each step, and who left with it.
        self.active = zeros(per_agent) if departures else None
        self.left = zeros(per_agent) if departures else None

    @property
    def nbytes(self) -> int:
        tensors = [*vars(self).values(), *self.metrics.values()]
        return sum(t.numel() * t.element_size() for t in tensors if isinstance(t, torch.Tensor))

    def group(self, group) -> Batch:
        """`group`'s part of every tensor (views where the group is contiguous)."""
        per_env = lambda t: None if t is None else t[..., None].expand(*t.shape, group.size)
        per_agent = lambda t: None if t is None else t[:, :, None].expand(-1, -1, group.size, -1)
        take = lambda t: None if t is None else group.take(t, 2)
        observe = lambda t: None if t is None else group.observe(t, 2)
        return Batch(obs=observe(self.obs), actions=take(self.actions),
                     log_probs=take(self.log_probs), values=take(self.values),
                     rewards=take(self.rewards), dones=per_env(self.dones),
                     last_values=group.take(self.last_values, 1),
                     next_obs=observe(self.next_obs), terminals=per_env(self.terminals),
                     states=per_agent(self.states), active=take(self.active),
                     left=take(self.left))


class Rollout:
    """Collects `steps` steps of every env into a RolloutBuffer, with an Acting (policy
    and sampling) and an EnvWrapper made with auto_reset=False. `fixed_weights`: a context
    the steps run in, in which no weight changes (the fast floor's makes each weight's
    cast form once for all the steps: wd_teach.fast.policy.fixed_weights). `centralized`:
    the critics read the env's global state (Env.global_state), kept beside the
    observations."""

    def __init__(self, wrapper, acting, steps: int, next_obs: bool = False, *,
                 graph: bool = False, precision: str = "fp32", log_probs: bool = True,
                 fixed_weights=nullcontext, centralized: bool = False):
        self.wrapper, self.acting = wrapper, acting
        self.fixed_weights = fixed_weights
        self.metrics = wrapper.env.episode_metrics()  # what the env reports per episode
        # Whether agents leave the game mid-episode (a caught player): then the buffer
        # keeps who was in it, and the learners count only them.
        departures = wrapper.env.agents_in_game(wrapper.store) is not None
        self.log_probs = log_probs  # False: the learner works them out itself (A2C)
        self.precision = precision
        self.buffer = RolloutBuffer(steps, wrapper.num_envs, wrapper.num_agents,
                                    wrapper.env.obs_size, acting.action_width(),
                                    acting.action_dtype(), wrapper.device, next_obs,
                                    metrics=self.metrics,
                                    state_size=wrapper.env.global_state_size if centralized
                                    else 0, departures=departures)
        self.stats = EpisodeStats(wrapper.num_envs, wrapper.num_agents, wrapper.device,
                                  metrics=self.metrics, departures=departures)
        self.timer = PhaseTimer(wrapper.device)
        # A graph only where every step is device work on fixed memory: a GPU, and an
        # acting whose random numbers come from the store (the sampler's Philox counters).
        graphed = graph and wrapper.device.type == "cuda" and acting.graph_safe
        self.graphed = graphed  # whether rollouts are replayed as a CUDA graph
        self._graphed = maybe_graphed(graphed, self._collect, wrapper.backend,
                                      watch=self._weights)

    def _weights(self):
        return [p for policy in self.acting.policies for p in policy.parameters()]

    def collect(self) -> RolloutBuffer:
        """`steps` steps of every env into the buffer (replayed as a graph once recorded,
        unless the timer is on)."""
        steps_before = self.stats.steps
        if self.timer.enabled:
            self._collect()
        else:
            self._graphed()
        # The host's step count: a replay runs none of _collect's Python.
        self.stats.steps = steps_before + self.buffer.steps
        return self.buffer

    @torch.no_grad()
    def _collect(self) -> RolloutBuffer:
        with precision_context(self.precision, self.wrapper.device), self.fixed_weights():
            return self._steps()

    def _steps(self) -> RolloutBuffer:
        env, acting, buffer, timer = self.wrapper, self.acting, self.buffer, self.timer
        for t in range(buffer.steps):
            buffer.obs[t].copy_(env.obs)
            if buffer.active is not None:  # who is in the game as it acts
                buffer.active[t].copy_(env.env.agents_in_game(env.store))
            state = self.global_state(t)  # None with independent critics
            with timer("policy"):
                acting.forward(env.obs, buffer.values[t], state)
            with timer("sampling"):
                acting.draw(buffer.actions[t], buffer.log_probs[t] if self.log_probs else None)
            with timer("env step"):
                _, rewards, done, info = env.step()  # the kernels read the store's actions
                buffer.rewards[t].copy_(rewards)
                buffer.dones[t].copy_(done)
                if buffer.next_obs is not None:
                    buffer.next_obs[t].copy_(env.obs)  # the last obs of an ended episode
                    torch.logical_and(done, ~info["truncated"], out=buffer.terminals[t])
                for name, metric in self.metrics.items():
                    buffer.metrics[name][t].copy_(metric.read(env.store))
                acting.after_step(done)
                env.reset_done()
        with timer("policy"):
            acting.forward(env.obs, buffer.last_values, self.global_state())  # to bootstrap
        if buffer.left is not None:
            # Who left with each step: in the game at t, out at t + 1 (after the last step:
            # out now). Where an env's episode ended at t, every agent's did, so the reset
            # in between changes nothing that counts. One pass for the whole rollout.
            after = torch.cat([buffer.active[1:], env.env.agents_in_game(env.store)[None]])
            torch.mul(buffer.active, 1 - after, out=buffer.left)
        # Episode returns, lengths and the env's metrics, for the whole rollout at once.
        self.stats.add_rollout(buffer.rewards, buffer.dones, buffer.metrics, buffer.active)
        return buffer

    def global_state(self, t: int | None = None) -> torch.Tensor | None:
        """The env's global state now, [envs, state_size], kept as step `t`'s in the
        buffer; None where the critics are independent (the buffer keeps none)."""
        if self.buffer.states is None:
            return None
        state = self.wrapper.env.global_state(self.wrapper.store)
        return state if t is None else self.buffer.states[t].copy_(state)
