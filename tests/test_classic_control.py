"""Every env that declares a gymnasium twin (Env.gymnasium_twin) follows it: from the same
state, with the same actions, the same trajectories (ours in float32, theirs in float64),
rewards, terminations and truncations. A new env folder that declares one is tested here
without an edit."""

import gymnasium
import numpy as np
import pytest

import wd_teach
from wd_teach.env.consistency import random_action_sequence
from wd_teach.env.registry import find_env, shipped_envs
from wd_teach.env.wrapper import EnvWrapper
from wd_teach_envs.pendulum import Pendulum

NUM_ENVS = 3
TWINS = [name for name in shipped_envs() if find_env(name).env_class.gymnasium_twin]


@pytest.fixture(params=["numpy", *wd_teach.BACKENDS])
def any_backend(request):
    if request.param != "numpy" and request.param not in wd_teach.discover().backends:
        pytest.skip(f"the {request.param} backend cannot run on this machine")
    return request.param


def twin_pair(name, backend):
    """Our env on `backend` and one gymnasium env per copy, each in our copy's start state.
    An env whose episodes do not end by themselves is cut at the twin's `steps` on both
    sides, so that the truncation is compared too."""
    env_class = find_env(name).env_class
    twin = env_class.gymnasium_twin
    env = env_class() if twin.every_episode_terminates else env_class(episode_length=twin.steps)
    wrapper = EnvWrapper(env, NUM_ENVS, backend, seed=3)
    start = np.stack([wrapper.store.pull(s)[:, 0] for s in twin.state], axis=1)
    gyms = []
    for state in start.astype(np.float64):
        gym = gymnasium.make(twin.env_id, max_episode_steps=env.episode_length)
        gym.reset(seed=0)
        gym.unwrapped.state = state.copy()
        gyms.append(gym)
    return env, twin, wrapper, gyms


@pytest.mark.parametrize("name", TWINS)
def test_env_matches_its_gymnasium_twin(name, any_backend):
    env, twin, wrapper, gyms = twin_pair(name, any_backend)
    running = [True] * NUM_ENVS
    ended_by_itself = [False] * NUM_ENVS
    compared = 0
    for actions in random_action_sequence(env, NUM_ENVS, twin.steps, seed=4):
        obs, rewards, done, info = wrapper.step(actions)
        for e, gym in enumerate(gyms):
            if not running[e]:
                continue
            want_obs, want_reward, terminated, truncated, _ = gym.step(
                env.gymnasium_action(actions[e, 0]))
            assert bool(done[e]) == (terminated or truncated)
            assert bool(info["truncated"][e]) == (truncated and not terminated)
            np.testing.assert_allclose(float(rewards[e, 0]), want_reward, rtol=twin.rtol,
                                       atol=twin.atol)
            if terminated or truncated:  # our env has already started the next episode
                running[e] = False
                ended_by_itself[e] = terminated
                continue
            np.testing.assert_allclose(obs[e, 0].cpu().numpy(), want_obs, rtol=twin.rtol,
                                       atol=twin.atol, err_msg=twin.why)
            compared += 1
    assert compared > twin.steps // 2 and not any(running)  # long enough, and every one ended
    if twin.every_episode_terminates:
        assert all(ended_by_itself)  # every pole fell


def test_every_env_with_a_twin_is_tested():
    assert {"cartpole", "pendulum"} <= set(TWINS)


def test_pendulum_ends_at_the_time_limit_as_gymnasium_does():
    wrapper = EnvWrapper(Pendulum(), 1, "numpy")
    for step in range(1, 201):
        _, _, done, info = wrapper.step(np.zeros((1, 1, 1), np.float32))
        assert bool(done[0]) == (step == 200) == bool(info["truncated"][0])
