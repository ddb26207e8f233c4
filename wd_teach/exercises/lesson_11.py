"""Checker for 11_multi_agent: what a centralized critic reads, built by the learner.

The learner writes `critic_inputs(obs, state)`: `obs` [envs, agents, obs_size] (each agent's
own observation) and `state` [envs, state_size] (the env's global state, one row per env),
giving [envs, agents, state_size + obs_size], for every agent the global state of its env
followed by its own observation: MAPPO's agent-specific global state, V(s, o_i). The checker
compares it number by number with that definition, then feeds it to a centralized critic of
wd_teach (wd_teach/train/policy.py) and checks that the value is the one the trainer's
policy computes from the same observations and state.
"""

from __future__ import annotations

import torch

from wd_teach.exercises.verdict import verdict_of
from wd_teach.train.policy import CategoricalActorCritic

ENVS, AGENTS, OBS_SIZE, STATE_SIZE = 3, 4, 5, 6


def reference_critic_inputs(obs: torch.Tensor, state: torch.Tensor) -> torch.Tensor:
    """The definition, one agent at a time: its env's state, then its observation."""
    envs, agents, _ = obs.shape
    rows = [[torch.cat([state[e], obs[e, a]]) for a in range(agents)] for e in range(envs)]
    return torch.stack([torch.stack(row) for row in rows])


def _answer(critic_inputs, obs, state):
    """The learner's output as a float tensor, or the reason it is not one."""
    try:
        got = critic_inputs(obs.clone(), state.clone())
    except Exception as err:  # the learner's code may fail in any way; say how
        return f"critic_inputs() raised {type(err).__name__}: {err}"
    if got is None:
        return "critic_inputs() returns None; return a tensor [envs, agents, state + obs]."
    got = torch.as_tensor(got, dtype=torch.float32)
    want = (ENVS, AGENTS, STATE_SIZE + OBS_SIZE)
    if tuple(got.shape) != want:
        return (f"got shape {tuple(got.shape)}, want {want}: one row per agent of every env, "
                "the state's numbers first, then the observation's.")
    return got


@verdict_of("critic_inputs()")
def check_critic_inputs(critic_inputs) -> bool:
    if critic_inputs is None or not callable(critic_inputs):
        print("Not yet: write critic_inputs(obs, state) and pass the function.")
        return False
    g = torch.Generator().manual_seed(11)
    obs = torch.randn(ENVS, AGENTS, OBS_SIZE, generator=g)
    state = torch.randn(ENVS, STATE_SIZE, generator=g)
    got = _answer(critic_inputs, obs, state)
    if isinstance(got, str):
        print(f"Not yet: {got}")
        return False
    want = reference_critic_inputs(obs, state)
    if not torch.equal(got, want):
        e, a, i = (int(k) for k in (got != want).nonzero()[0])
        part = (f"the state's number {i}" if i < STATE_SIZE
                else f"the observation's number {i - STATE_SIZE}")
        print(f"Not yet: env {e}, agent {a}, position {i} ({part}): got {float(got[e, a, i]):.4f}, "
              f"want {float(want[e, a, i]):.4f}.")
        print("Hint: every agent of env e reads state[e] (expand it over the agents' axis), "
              "then its own obs[e, a]; torch.cat along the last axis.")
        return False
    torch.manual_seed(0)
    policy = CategoricalActorCritic(OBS_SIZE, [3], [8], state_size=STATE_SIZE)
    with torch.no_grad():
        yours = policy.critic(got).squeeze(-1)
        _, trainers = policy.actor_and_value(obs, state[:, None].expand(-1, AGENTS, -1))
    if not torch.allclose(yours, trainers):
        print("Not yet: the values from your inputs differ from the trainer's policy's.")
        return False
    print("All right: every agent reads its env's global state and then its own observation, "
          "and a centralized critic fed your inputs gives the trainer's values.")
    return True
