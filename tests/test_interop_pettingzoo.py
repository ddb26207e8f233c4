"""Every multi-agent env as a PettingZoo ParallelEnv: PettingZoo's own API test passes on
every backend this machine runs, agents are named by role with one gymnasium space each,
a game played through the ParallelEnv is the EnvWrapper's game step by step (same seed,
same actions: same observations, rewards and endings), an agent that leaves the game
(a tagged runner) leaves `agents`, and bad input is refused with a clear error."""

import numpy as np
import pytest
import torch
from gymnasium import spaces

from wd_teach.env.registry import find_env, shipped_envs
from wd_teach.env.wrapper import EnvWrapper
from wd_teach.errors import EnvError

pytest.importorskip("pettingzoo", reason='PettingZoo is an extra: pip install -e '
                    '".[pettingzoo]" (the dev extra, which CI installs, has it)')
from pettingzoo.test import parallel_api_test  # noqa: E402

from wd_teach.interop.pettingzoo import PettingZooEnv, resting_action  # noqa: E402

MULTI_AGENT = [name for name in shipped_envs() if find_env(name).env_class().num_agents > 1]
#: Short games on a small field: runners are tagged, and leave, well before time is up.
CROWDED = {"tag_continuous": dict(tagging_distance=0.3, field_size=1.0),
           "tag_grid": dict(grid_size=4)}


def small(name, episode_length=12):
    """A small game of env `name`: 2 taggers and 3 runners for the Tag games."""
    env_class = find_env(name).env_class
    if name.startswith("tag"):
        return env_class(num_taggers=2, num_runners=3, num_nearest=2,
                         episode_length=episode_length, **CROWDED.get(name, {}))
    return env_class(episode_length=episode_length)


def test_every_multi_agent_env_is_here():
    assert {"tag_continuous", "tag_grid"} <= set(MULTI_AGENT)


@pytest.mark.parametrize("name", MULTI_AGENT)
def test_pettingzoo_parallel_api_test_passes(name, backend, recwarn):
    parallel_api_test(PettingZooEnv(small(name), backend), num_cycles=30)
    assert [str(w.message) for w in recwarn if "pettingzoo" in w.filename] == []  # its doubts


def test_a_single_agent_env_passes_too():
    env = PettingZooEnv("cartpole", "numpy")
    assert env.possible_agents == ["agent_0"]
    parallel_api_test(env, num_cycles=30)


def test_agents_are_named_by_role_with_one_gymnasium_space_each():
    env = PettingZooEnv(small("tag_continuous"), "numpy")
    assert env.possible_agents == ["tagger_0", "tagger_1", "runner_0", "runner_1", "runner_2"]
    assert env.agents == []  # until reset
    for agent in env.possible_agents:
        assert isinstance(env.observation_space(agent), spaces.Box)
        assert env.observation_space(agent) is env.observation_space(agent)
        assert env.action_space(agent) == small("tag_continuous").action_space
    obs, infos = env.reset(seed=3)
    assert set(obs) == set(infos) == set(env.agents) == set(env.possible_agents)
    assert all(env.observation_space(a).contains(o) for a, o in obs.items())


def play_beside_the_wrapper(name, backend, seed=5, episode_length=40):
    """Play a game through the ParallelEnv and the same game through an EnvWrapper of one
    env, same seed and actions; compare every step. Returns who left before the end.

    The random actions come from torch's generator on the store's device, and the CPU's and
    the GPU's streams differ: 40 steps on a crowded field are long enough that runners are
    tagged under either (12 were not, for seed 5 on a GPU)."""
    ours = PettingZooEnv(small(name, episode_length), backend, seed=seed)
    theirs = EnvWrapper(small(name, episode_length), 1, backend, seed=seed, auto_reset=False)
    rows = {agent: row for row, agent in enumerate(ours.possible_agents)}
    obs, _ = ours.reset()
    theirs.reset()
    left_early = []
    for _ in range(episode_length + 1):
        want_obs = theirs.obs[0].cpu().numpy()
        for agent, value in obs.items():
            size = ours.observation_space(agent).shape[0]  # its role's columns
            np.testing.assert_array_equal(value, want_obs[rows[agent]][:size])
        if not ours.agents:
            break
        full = theirs.random_actions()
        rest = torch.as_tensor(resting_action(theirs.action_space, theirs.env.action_dtype))
        for agent, row in rows.items():
            if agent not in ours.agents:
                full[0, row] = rest  # what the ParallelEnv gives an agent that left
        acting = list(ours.agents)
        obs, rewards, terminated, truncated, _ = ours.step(
            {a: full[0, rows[a]].cpu().numpy() for a in acting})
        _, want_rewards, done, info = theirs.step(full)
        playing = theirs.env.agents_in_game(theirs.store)
        assert set(obs) == set(rewards) == set(terminated) == set(truncated) == set(acting)
        for agent in acting:
            row = rows[agent]
            assert rewards[agent] == pytest.approx(float(want_rewards[0, row]), abs=0)
            gone = playing is not None and not bool(playing[0, row])
            assert terminated[agent] == (gone or (bool(done[0]) and not info["truncated"][0]))
            assert truncated[agent] == (bool(info["truncated"][0]) and not terminated[agent])
            if gone and not done[0]:
                left_early.append(agent)
        assert ours.agents == [a for a in acting if not (terminated[a] or truncated[a])]
    return left_early


@pytest.mark.parametrize("name", MULTI_AGENT)
def test_a_game_through_pettingzoo_is_the_wrappers_game(name, backend):
    left_early = play_beside_the_wrapper(name, backend)
    if name in CROWDED:  # the crowded games tag runners before time is up
        assert left_early and all(a.startswith("runner") for a in left_early), left_early
    else:  # the others keep every agent to the end
        assert left_early == []


def test_a_tagged_runner_leaves_the_game_and_the_taggers_stay():
    env = PettingZooEnv(small("tag_grid", episode_length=60), "numpy", seed=1)
    env.reset()
    while len(env.agents) == 5:
        env.step({a: env.action_space(a).sample() for a in env.agents})
    assert env.agents[:2] == ["tagger_0", "tagger_1"]  # the game goes on without the runner
    gone = [a for a in env.possible_agents if a not in env.agents]  # the first one is named
    with pytest.raises(EnvError, match=rf"'{gone[0]}' is no longer in the game"):
        env.step({a: env.action_space(a).sample() for a in env.possible_agents})


def test_a_runner_that_stays_after_a_tag_stays_in_agents():
    env = PettingZooEnv(find_env("tag_grid").env_class(
        num_taggers=2, num_runners=3, num_nearest=2, episode_length=8, grid_size=4,
        runner_exits_when_tagged=False), "numpy")
    env.reset(seed=2)
    for _ in range(7):
        _, _, terminated, truncated, _ = env.step(
            {a: env.action_space(a).sample() for a in env.agents})
        assert not any(terminated.values()) and not any(truncated.values())
        assert env.agents == env.possible_agents
    _, _, terminated, truncated, _ = env.step(
        {a: env.action_space(a).sample() for a in env.agents})
    assert all(truncated.values()) and env.agents == []  # time is up: all leave at once


def test_reset_with_a_seed_makes_the_same_game_again():
    env = PettingZooEnv(small("tag_continuous"), "numpy")
    first, _ = env.reset(seed=7)
    env.step({a: env.action_space(a).sample() for a in env.agents})
    again, _ = env.reset(seed=7)
    other, _ = env.reset(seed=8)
    assert all(np.array_equal(first[a], again[a]) for a in first)
    assert not all(np.array_equal(first[a], other[a]) for a in first)


def game():
    env = PettingZooEnv(small("tag_grid"), "numpy")
    env.reset(seed=0)
    return env


def all_act(env, **changed):
    actions = {a: env.action_space(a).sample() for a in env.agents}
    actions.update(changed)
    return actions


BAD = [
    (lambda: game().observation_space("tagger_9"), r"no agent named 'tagger_9' in this game. "
                                                   r"Agents: tagger_0, tagger_1, runner_0"),
    (lambda: PettingZooEnv(small("tag_grid"), "numpy").step({}),
     r"the game is over \(or was never started\).*Call reset\(\)"),
    (lambda: game().step([0] * 5), r"actions must be a dict of agent name -> action, got list"),
    (lambda: (env := game()).step({a: 0 for a in env.agents[1:]}),
     r"no action for tagger_0: every agent in env.agents acts each step"),
    (lambda: (env := game()).step(all_act(env, nobody=0)), r"no agent named 'nobody'"),
    (lambda: (env := game()).step(all_act(env, tagger_0=np.zeros(3, np.int64))),
     r"the action of 'tagger_0' has shape \(3,\); its action space .* takes"),
    (lambda: (env := game()).step(all_act(env, tagger_0=np.float32(1.0))),
     r"the action of 'tagger_0' must be integers \(discrete\), got float32"),
    (lambda: (env := game()).step(all_act(env, tagger_0=np.int64(9))),
     r"action 9 of env 0, agent 0 is out of range"),
    (lambda: PettingZooEnv(small("tag_grid"), "numpy").reset(seed=-1),
     r"seed must be a whole number >= 0, got -1"),
]


@pytest.mark.parametrize("call, message", BAD)
def test_bad_input_is_refused_clearly(call, message):
    with pytest.raises(EnvError, match=message):
        call()
