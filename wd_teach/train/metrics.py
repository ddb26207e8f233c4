"""What a training run measures, kept on the device until the end of an iteration.

A rollout of a hundred steps that printed a return each step would stop the GPU a hundred
times: `.item()`, `.cpu()` and printing a tensor all wait for every queued kernel to
finish, then copy. So everything here is added up on the device, in tensors of a fixed
size, and comes to the host once per iteration, in one copy (`Trainer.iterate`).

EpisodeStats  episode returns and lengths, and the env's own episode metrics, added up
              as episodes end, without knowing on the host which did.
PhaseTimer    where the time goes (policy, sampling, env step, training). Off by default:
              timing on a GPU needs CUDA events and one synchronisation to read them, so a
              normal run has no timer at all.
"""

from __future__ import annotations

from contextlib import nullcontext

import torch

from wd_teach.timing import Clock

#: The phases of an iteration, in the order they run.
PHASES = ("policy", "sampling", "env step", "training")


def per_episode(metric: str) -> str:
    """The history's key of an env's episode metric: `caught` -> `caught_per_episode`."""
    return f"{metric}_per_episode"


class EpisodeStats:
    """Sums over finished episodes, per agent, on the device.

    Each step: `update(rewards, done, metrics)`. Every agent's running return grows by its
    reward; where `done` is set, the running values are added to the sums and start over.
    All of it is arithmetic with done as 0 or 1, so no branch needs to know which
    environments finished. `metrics`: the env's episode metrics (Env.episode_metrics) by
    name, each a value per env read this step; the value at an episode's end is summed.
    """

    def __init__(self, num_envs: int, num_agents: int, device: torch.device,
                 metrics=(), departures: bool = False):
        zeros = lambda *shape: torch.zeros(shape, device=device)
        self.running_return = zeros(num_envs, num_agents)
        self.running_length = zeros(num_envs)
        self.return_sum = zeros(num_agents)  # over finished episodes
        self.reward_sum = zeros(num_agents)  # over every step
        self.length_sum = zeros()
        self.metric_sums = {name: zeros() for name in metrics}  # the env's episode metrics
        self.episodes = zeros()
        self.steps = 0  # steps since the last pull: a host count, known without asking
        # In a game that agents leave (Env.agents_in_game), the steps each agent was in it:
        # a reward per step is then per step in the game, not diluted by the steps after.
        self.active_steps = zeros(num_agents) if departures else None

    def update(self, rewards: torch.Tensor, done: torch.Tensor,
               metrics: dict[str, torch.Tensor] | None = None) -> None:
        ended = done.to(self.running_return.dtype)
        self.running_return += rewards
        self.running_length += 1
        self.reward_sum += rewards.sum(0)
        self.return_sum += (self.running_return * ended[:, None]).sum(0)
        self.length_sum += (self.running_length * ended).sum()
        self.episodes += ended.sum()
        for name, values in (metrics or {}).items():
            self.metric_sums[name] += (values.to(ended.dtype) * ended).sum()
        self.running_return *= 1 - ended[:, None]
        self.running_length *= 1 - ended
        self.steps += 1

    def add_rollout(self, rewards: torch.Tensor, dones: torch.Tensor,
                    metrics: dict[str, torch.Tensor] | None = None,
                    active: torch.Tensor | None = None) -> None:
        """What `update` does step by step, for a whole rollout at once: rewards [steps,
        envs, agents], dones [steps, envs], each metric [steps, envs]; `active` [steps, envs,
        agents] 1 where an agent was in the game (None: every agent always is).

        `update` is some twenty small operations per step; in a rollout of a hundred steps
        that is two thousand kernels for a few sums. Here the same sums take a handful,
        from two facts: an episode's return at step t is a difference of running sums
        (the cumulative reward now, less the cumulative reward when it began), and its
        length is t less the step the last episode ended at (torch.cummax finds it).
        """
        steps = rewards.shape[0]
        ended = dones.to(self.running_return.dtype)
        t = torch.arange(steps, device=ended.device)
        # The last step before t at which each env's episode ended (-1: none in this rollout).
        marks = torch.where(ended > 0, t[:, None], -1)
        last = torch.cat([torch.full_like(marks[:1], -1), marks[:-1]]).cummax(0).values
        fresh = (last >= 0).to(ended.dtype)  # 1: the episode began inside this rollout
        total = rewards.cumsum(0)
        before = total.gather(0, last.clamp(min=0)[..., None].expand_as(total))
        returns = total - fresh[..., None] * before + (1 - fresh)[..., None] * self.running_return
        lengths = (t[:, None] - last) + (1 - fresh) * self.running_length
        self.reward_sum += rewards.sum((0, 1))
        if self.active_steps is not None and active is not None:
            self.active_steps += active.sum((0, 1))
        self.return_sum += (returns * ended[..., None]).sum((0, 1))
        self.length_sum += (lengths * ended).sum()
        self.episodes += ended.sum()
        for name, values in (metrics or {}).items():
            self.metric_sums[name] += (values.to(ended.dtype) * ended).sum()
        self.running_return.copy_(returns[-1] * (1 - ended[-1])[:, None])
        self.running_length.copy_(lengths[-1] * (1 - ended[-1]))
        self.steps += steps

    def device_values(self, groups, num_envs: int) -> dict[str, torch.Tensor]:
        """This iteration's metrics as 0-d device tensors (NaN where no episode ended):
        per group, the mean episode return of one of its agents and the mean reward per
        agent-step; the mean episode length; each env metric per episode."""
        episodes = self.episodes
        values = {"episodes": episodes, "episode_length": self.length_sum / episodes}
        for name, total in self.metric_sums.items():
            values[per_episode(name)] = total / episodes
        for group in groups:
            returns = group.take(self.return_sum, 0).sum()
            rewards = group.take(self.reward_sum, 0).sum()
            values[f"{group.name}/return"] = returns / (episodes * group.size)
            if self.active_steps is None:
                agent_steps = max(self.steps, 1) * num_envs * group.size
            else:  # only the steps its agents were in the game
                agent_steps = group.take(self.active_steps, 0).sum().clamp(min=1)
            values[f"{group.name}/reward"] = rewards / agent_steps
        return values

    def clear(self) -> None:
        """Start the sums over (the running episodes go on)."""
        for sums in (self.return_sum, self.reward_sum, self.length_sum, self.episodes,
                     *self.metric_sums.values()):
            sums.zero_()
        if self.active_steps is not None:
            self.active_steps.zero_()
        self.steps = 0

    def state_dict(self) -> dict:
        state = {name: value.clone() if isinstance(value, torch.Tensor) else value
                 for name, value in vars(self).items() if name != "metric_sums"}
        state["metric_sums"] = {n: v.clone() for n, v in self.metric_sums.items()}
        return state

    def load_state_dict(self, state: dict) -> None:
        for name, value in state.items():
            mine = getattr(self, name)
            if name == "metric_sums":
                for metric, total in value.items():
                    mine[metric].copy_(total)
            elif isinstance(mine, torch.Tensor):
                mine.copy_(value)
            else:
                setattr(self, name, value)


class PhaseTimer:
    """Time spent in each phase of an iteration, only when `enabled`.

    `with timer("policy"): ...` brackets a phase with marks of wd_teach.timing's Clock. On
    a GPU they are CUDA events, recorded into the stream with the kernels, so timing adds
    no waits inside the loop; `pull()` waits once for the last event and reads every
    interval. On the CPU they are clock readings. Disabled, a bracket is a no-op.

    `pull()` gives seconds per phase, `total` (first bracket opened to last closed) and
    `other`: the total less the phases, the loop's own bookkeeping.
    """

    def __init__(self, device: torch.device, enabled: bool = False):
        self.clock = Clock(device)
        self.enabled = enabled
        self._marks: list[tuple[str, object, object]] = []
        self._null = nullcontext()

    def __call__(self, phase: str):
        return self._measure(phase) if self.enabled else self._null

    class _Bracket:
        def __init__(self, timer, phase):
            self.timer, self.phase = timer, phase

        def __enter__(self):
            self.start = self.timer.clock.mark()

        def __exit__(self, *exc):
            self.timer._marks.append((self.phase, self.start, self.timer.clock.mark()))

    def _measure(self, phase: str):
        return self._Bracket(self, phase)

    def pull(self) -> dict[str, float]:
        """Seconds per phase since the last pull (one synchronisation on a GPU)."""
        if not self._marks:
            return {}
        seconds = self.clock.seconds
        total = seconds(self._marks[0][1], self._marks[-1][2])  # waits for the last mark
        times = dict.fromkeys(PHASES, 0.0)
        for phase, start, end in self._marks:
            times[phase] = times.get(phase, 0.0) + seconds(start, end)
        times["other"] = max(total - sum(times.values()), 0.0)
        times["total"] = total
        self._marks.clear()
        return times
