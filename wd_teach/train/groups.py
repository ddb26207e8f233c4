"""Groups of agents: which agents each policy acts for.

A run names its groups with a mapping, policy name -> agent indices (policies.NAME.agents in
a config); `agent_groups` checks that every agent is in exactly one group, and an AgentGroup
reads and writes its agents' part of any tensor with an agent axis.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import torch

from wd_teach.errors import ConfigError


@dataclass(frozen=True)
class AgentGroup:
    """The agents one policy acts for: `agents`, indices into the agent axis.

    `take(tensor, dim)` and `put(tensor, dim, values)` read and write this group's part of
    a tensor whose axis `dim` is the agent axis. A contiguous group (agents 0..9, say) is a
    view, `narrow`, and costs nothing; any other group is a gather and a scatter on the
    device.

    `obs_size`: how many of the observation's numbers this group's agents see, where their
    role sees fewer than the env's widest (Env.role_observation_spaces); `observe(obs, dim)`
    is `take` and then only those first columns, so no padding reaches the group's policy.
    None: the whole observation.

    `action_space`: what this group's agents choose from, where their role has its own
    (Env.role_action_spaces: fewer choices than the env's widest). None: the env's.
    """

    name: str
    agents: tuple[int, ...]
    obs_size: int | None = None
    action_space: object = None
    _index: dict = field(default_factory=dict, repr=False, compare=False)

    @property
    def size(self) -> int:
        return len(self.agents)

    @property
    def contiguous(self) -> bool:
        first = self.agents[0]
        return self.agents == tuple(range(first, first + self.size))

    def index(self, device: torch.device) -> torch.Tensor:
        """The agents as a long tensor on `device` (made once per device)."""
        key = str(device)
        if key not in self._index:
            self._index[key] = torch.tensor(self.agents, dtype=torch.long, device=device)
        return self._index[key]

    def take(self, tensor: torch.Tensor, dim: int) -> torch.Tensor:
        if self.contiguous:
            return tensor.narrow(dim, self.agents[0], self.size)
        return tensor.index_select(dim, self.index(tensor.device))

    def observe(self, obs: torch.Tensor, dim: int) -> torch.Tensor:
        """This group's observations: its agents (axis `dim`), its role's columns (the last)."""
        mine = self.take(obs, dim)
        if self.obs_size is None or self.obs_size == mine.shape[-1]:
            return mine
        return mine.narrow(-1, 0, self.obs_size)

    def put(self, tensor: torch.Tensor, dim: int, values: torch.Tensor) -> None:
        if self.contiguous:
            tensor.narrow(dim, self.agents[0], self.size).copy_(values)
        else:
            tensor.index_copy_(dim, self.index(tensor.device), values.to(tensor.dtype))


def agent_groups(mapping: Mapping[str, Sequence[int]], num_agents: int) -> list[AgentGroup]:
    """Groups from a mapping policy name -> agent indices, checked: every agent of
    0..num_agents-1 in exactly one group, no group empty."""
    if not isinstance(mapping, Mapping) or not mapping:
        raise ConfigError("policies: give at least one policy, as name -> agents, e.g. "
                          "{'taggers': [0, 1], 'runners': [2, 3, 4]}.")
    owner: dict[int, str] = {}
    groups = []
    for name, agents in mapping.items():
        agents = tuple(int(a) for a in agents)
        if not agents:
            raise ConfigError(f"policy {name!r} has no agents. Give it some, or leave it out.")
        for agent in agents:
            if not 0 <= agent < num_agents:
                raise ConfigError(f"policy {name!r} names agent {agent}, but the environment "
                                  f"has agents 0 to {num_agents - 1}.")
            if agent in owner:
                twice = ("twice" if owner[agent] == name
                         else f"in both {owner[agent]!r} and {name!r}")
                raise ConfigError(f"agent {agent} is {twice}: every agent belongs to exactly "
                                  "one policy.")
            owner[agent] = name
        groups.append(AgentGroup(str(name), tuple(sorted(agents))))
    missing = [a for a in range(num_agents) if a not in owner]
    if missing:
        shown = ", ".join(map(str, missing[:10])) + (", ..." if len(missing) > 10 else "")
        raise ConfigError(f"{len(missing)} agent(s) belong to no policy ({shown}): every agent "
                          f"of 0 to {num_agents - 1} must be in exactly one policy.")
    return groups
