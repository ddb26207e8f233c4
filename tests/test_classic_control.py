"""CartPole and Pendulum follow gymnasium's own CartPoleEnv and PendulumEnv: from the same
state, with the same actions, the same trajectories (ours in float32, theirs in float64)."""

import numpy as np
import pytest
from gymnasium.envs.classic_control.cartpole import CartPoleEnv
from gymnasium.envs.classic_control.pendulum import PendulumEnv

import wd_teach
from wd_teach.consistency import random_action_sequence
from wd_teach.wrapper import EnvWrapper
from wd_teach_envs.cartpole import CartPole
from wd_teach_envs.pendulum import Pendulum

NUM_ENVS = 3
#: float32 against float64: a unit in the 7th digit per step, grown by the dynamics. Over
#: 200 envs the largest difference seen was 4e-6 for CartPole (60 steps, every pole fell)
#: and 6e-5 for Pendulum (40 steps; it keeps growing, to 2e-4 by step 60).
CARTPOLE_STEPS, CARTPOLE_RTOL, CARTPOLE_ATOL = 60, 1e-4, 1e-5
PENDULUM_STEPS, PENDULUM_RTOL, PENDULUM_ATOL = 40, 1e-4, 1e-4


@pytest.fixture(params=["numpy", *wd_teach.BACKENDS])
def any_backend(request):
    if request.param != "numpy" and request.param not in wd_teach.discover().backends:
        pytest.skip(f"the {request.param} backend cannot run on this machine")
    return request.param


def test_cartpole_matches_gymnasium(any_backend):
    env = CartPole()
    wrapper = EnvWrapper(env, NUM_ENVS, any_backend, seed=3)
    start = wrapper.store.pull("obs")[:, 0].astype(np.float64)
    gyms = [CartPoleEnv() for _ in range(NUM_ENVS)]
    for gym, state in zip(gyms, start, strict=True):
        gym.reset(seed=0)
        gym.state = state.copy()
    running = [True] * NUM_ENVS
    compared = 0
    for actions in random_action_sequence(env, NUM_ENVS, CARTPOLE_STEPS, seed=4):
        obs, rewards, done, info = wrapper.step(actions)
        for e, gym in enumerate(gyms):
            if not running[e]:
                continue
            want_obs, want_reward, terminated, truncated, _ = gym.step(int(actions[e, 0]))
            assert bool(done[e]) == terminated
            assert float(rewards[e, 0]) == want_reward
            if terminated:  # our env has already started the next episode
                running[e] = False
                continue
            np.testing.assert_allclose(obs[e, 0].cpu().numpy(), want_obs, rtol=CARTPOLE_RTOL,
                                       atol=CARTPOLE_ATOL)
            compared += 1
    assert compared > 30 and not any(running)  # long enough, and every pole fell


def test_pendulum_matches_gymnasium(any_backend):
    env = Pendulum()
    wrapper = EnvWrapper(env, NUM_ENVS, any_backend, seed=3)
    start = np.stack([wrapper.store.pull("theta")[:, 0], wrapper.store.pull("theta_dot")[:, 0]],
                     axis=1).astype(np.float64)
    gyms = [PendulumEnv() for _ in range(NUM_ENVS)]
    for gym, state in zip(gyms, start, strict=True):
        gym.reset(seed=0)
        gym.state = state.copy()
    for actions in random_action_sequence(env, NUM_ENVS, PENDULUM_STEPS, seed=4):
        obs, rewards, done, _ = wrapper.step(actions)
        for e, gym in enumerate(gyms):
            want_obs, want_reward, terminated, _, _ = gym.step(actions[e, 0])
            np.testing.assert_allclose(obs[e, 0].cpu().numpy(), want_obs, rtol=PENDULUM_RTOL,
                                       atol=PENDULUM_ATOL)
            np.testing.assert_allclose(float(rewards[e, 0]), want_reward, rtol=PENDULUM_RTOL,
                                       atol=PENDULUM_ATOL)
            assert not terminated and not bool(done[e])


def test_pendulum_ends_at_the_time_limit_as_gymnasium_does():
    wrapper = EnvWrapper(Pendulum(), 1, "numpy")
    for step in range(1, 201):
        _, _, done, info = wrapper.step(np.zeros((1, 1, 1), np.float32))
        assert bool(done[0]) == (step == 200) == bool(info["truncated"][0])
