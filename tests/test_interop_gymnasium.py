"""The single-agent envs as gymnasium's vector env: gymnasium's own checker passes on one
copy, the batched spaces and dtypes are gymnasium's, every env steps beside gymnasium's own
vector env of its twin (same starts, same actions: same observations within float32
rounding, same rewards, terminations, truncations and next-step restarts), the other
autoreset modes do what gymnasium 1.x says, gymnasium's wrappers run on it, and bad input
is refused with a clear error."""

import re
import warnings
from pathlib import Path

import gymnasium
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env
from gymnasium.vector import AutoresetMode, SyncVectorEnv
from gymnasium.vector.utils import batch_space

import wd_teach
from wd_teach.env.registry import find_env, shipped_envs
from wd_teach.errors import EnvError
from wd_teach.interop.gymnasium import GymnasiumEnv, GymnasiumVectorEnv
from wd_teach_envs.cartpole import CartPole
from wd_teach_envs.pendulum import Pendulum
from wd_teach_envs.tag_grid import TagGrid

NUM_ENVS = 4
SINGLE_AGENT = [name for name in shipped_envs() if find_env(name).env_class().num_agents == 1]
TWINS = [name for name in SINGLE_AGENT if find_env(name).env_class.gymnasium_twin]


def test_the_classic_control_envs_are_all_here():
    assert {"cartpole", "pendulum", "acrobot", "mountain_car",
            "mountain_car_continuous"} <= set(TWINS)


def test_the_adapters_name_no_env():
    """Like the trainer, the adapters read only the env contract: every env fits them."""
    names = [*shipped_envs(), "tag", "tagger", "runner", "cart", "pendulum"]
    for module in (Path(wd_teach.__file__).parent / "interop").glob("*.py"):
        text = module.read_text().lower()
        found = [n for n in names if re.search(rf"\b{re.escape(n)}s?\b", text)]
        assert found == [], f"{module.name} names {found}"


def checker_warnings(env) -> set[str]:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        check_env(env, skip_render_check=True)
    return {str(w.message) for w in caught}


@pytest.mark.parametrize("name", SINGLE_AGENT)
def test_gymnasium_check_env_passes_on_one_copy(name):
    """gymnasium's checker raises on what breaks its API; what it only warns about must be
    what it also warns about on gymnasium's own env (CartPole's infinite velocity bounds,
    say), and nothing more."""
    ours = checker_warnings(GymnasiumEnv(name, "numpy"))
    twin = find_env(name).env_class.gymnasium_twin
    theirs = checker_warnings(gymnasium.make(twin.env_id).unwrapped) if twin else set()
    assert ours <= theirs


@pytest.mark.parametrize("name", SINGLE_AGENT)
def test_batched_spaces_dtypes_and_fresh_arrays(name):
    envs = GymnasiumVectorEnv(name, NUM_ENVS, "numpy")
    single = find_env(name).env_class()
    assert envs.single_observation_space == single.observation_space
    assert envs.observation_space == batch_space(single.observation_space, NUM_ENVS)
    assert envs.action_space == batch_space(single.action_space, NUM_ENVS)
    assert envs.metadata["autoreset_mode"] == AutoresetMode.NEXT_STEP
    envs.action_space.seed(0)
    obs, info = envs.reset(seed=1)
    assert obs in envs.observation_space and info == {}
    for _ in range(3):
        before = obs
        obs, rewards, terminated, truncated, info = envs.step(envs.action_space.sample())
        assert obs in envs.observation_space and not np.shares_memory(obs, before)
        assert rewards.dtype == np.float64 and rewards.shape == (NUM_ENVS,)
        assert terminated.dtype == truncated.dtype == np.bool_


def twin_vector_env(name, backend="numpy", **options):
    """Ours and gymnasium's SyncVectorEnv of the twin, every copy of theirs put in our copy's
    start state. Episodes short enough that each copy restarts within the twin's steps."""
    env_class = find_env(name).env_class
    twin = env_class.gymnasium_twin
    env = env_class() if twin.every_episode_terminates else env_class(
        episode_length=twin.steps // 3)
    ours = GymnasiumVectorEnv(env, NUM_ENVS, backend, seed=3, **options)
    theirs = SyncVectorEnv([lambda: gymnasium.make(twin.env_id,
                                                   max_episode_steps=env.episode_length)
                            for _ in range(NUM_ENVS)], **options)
    theirs.reset(seed=0)
    put_state(ours, theirs, twin, range(NUM_ENVS))
    return env, twin, ours, theirs


def put_state(ours, theirs, twin, copies) -> None:
    state = np.stack([ours.wrapper.store.pull(s)[:, 0] for s in twin.state], axis=1)
    for copy in copies:
        theirs.envs[copy].unwrapped.state = state[copy].astype(np.float64)


@pytest.mark.parametrize("name", TWINS)
def test_steps_beside_gymnasiums_own_vector_env(name):
    env, twin, ours, theirs = twin_vector_env(name)
    first, _ = ours.reset()
    ours.action_space.seed(4)
    restarting = np.zeros(NUM_ENVS, bool)
    restarts = compared = 0
    for _ in range(twin.steps):
        actions = ours.action_space.sample()
        obs, rewards, terminated, truncated, _ = ours.step(actions)
        their_actions = np.stack([env.gymnasium_action(a) for a in actions])
        want_obs, want_rewards, want_terminated, want_truncated, _ = theirs.step(their_actions)
        np.testing.assert_array_equal(terminated, want_terminated)
        np.testing.assert_array_equal(truncated, want_truncated)
        np.testing.assert_allclose(rewards, want_rewards, rtol=twin.rtol, atol=twin.atol)
        # a next-step restart: reward 0, neither flag, and our copy's start again; theirs
        # drew a new start, so it is put in ours before the next step
        assert not (terminated | truncated)[restarting].any()
        assert (rewards[restarting] == 0).all()
        np.testing.assert_array_equal(obs[restarting], first[restarting])
        put_state(ours, theirs, twin, np.flatnonzero(restarting))
        running = ~restarting
        np.testing.assert_allclose(obs[running], want_obs[running], rtol=twin.rtol,
                                   atol=twin.atol, err_msg=twin.why)
        compared += int(running.sum())
        restarts += int(restarting.sum())
        restarting = terminated | truncated
    assert restarts >= NUM_ENVS and compared > twin.steps * NUM_ENVS // 2


def test_same_step_autoreset_returns_the_start_and_keeps_the_last_in_info():
    """SAME_STEP beside NEXT_STEP, same actions: the ending step's observation is in
    info["final_obs"], the start in its place; the info's keys are gymnasium's own."""
    same = GymnasiumVectorEnv(CartPole(episode_length=3), 2, "numpy",
                              autoreset_mode=AutoresetMode.SAME_STEP)
    nxt = GymnasiumVectorEnv(CartPole(episode_length=3), 2, "numpy")
    first, _ = same.reset()
    nxt.reset()
    _, _, _, theirs = twin_vector_env("cartpole", autoreset_mode=AutoresetMode.SAME_STEP)
    actions = np.array([1, 0])
    for step in range(1, 4):
        obs, rewards, terminated, truncated, info = same.step(actions)
        want = nxt.step(actions)
        np.testing.assert_array_equal(rewards, want[1])
        np.testing.assert_array_equal(truncated, want[3])
        if step < 3:
            np.testing.assert_array_equal(obs, want[0])
            assert info == {}
    assert truncated.all()
    np.testing.assert_array_equal(obs, first)
    assert info["_final_obs"].all()
    np.testing.assert_array_equal(np.stack(info["final_obs"]), want[0])
    their_info = None
    for _ in range(600):  # until one of gymnasium's own copies ends
        *_, their_info = theirs.step(np.array([1] * NUM_ENVS))
        if their_info:
            break
    assert set(info) == set(their_info) == {"final_obs", "_final_obs", "final_info",
                                            "_final_info"}


def test_disabled_autoreset_leaves_restarts_to_the_caller():
    envs = GymnasiumVectorEnv(CartPole(episode_length=2), 3, "numpy",
                              autoreset_mode="Disabled")
    first, _ = envs.reset()
    envs.step(np.array([1, 1, 1]))
    moved, _, _, truncated, _ = envs.step(np.array([1, 1, 1]))
    assert truncated.all()
    with pytest.raises(EnvError, match="reset_mask"):
        envs.step(np.array([1, 1, 1]))
    obs, _ = envs.reset(options={"reset_mask": np.array([True, False, False])})
    np.testing.assert_array_equal(obs[0], first[0])
    np.testing.assert_array_equal(obs[1:], moved[1:])
    with pytest.raises(EnvError, match="reset_mask"):  # the other two are still ended
        envs.step(np.array([1, 1, 1]))


def test_reset_with_a_seed_makes_new_starts_and_the_same_ones_again():
    envs = GymnasiumVectorEnv(CartPole(), NUM_ENVS, "numpy")
    seven, _ = envs.reset(seed=7)
    np.testing.assert_array_equal(seven, CartPole().full_state(NUM_ENVS, 7)["obs"].data[:, 0])
    assert not np.array_equal(envs.reset(seed=8)[0], seven)
    np.testing.assert_array_equal(envs.reset(seed=7)[0], seven)
    np.testing.assert_array_equal(envs.reset()[0], seven)  # no seed: the same starts


def test_gymnasiums_episode_statistics_wrapper_counts_our_episodes():
    """RecordEpisodeStatistics reads the autoreset mode from our metadata: CartPole pays 1 a
    step, so each episode's return is its length, and the poles fall within 100 steps."""
    envs = gymnasium.wrappers.vector.RecordEpisodeStatistics(
        GymnasiumVectorEnv(CartPole(), NUM_ENVS, "numpy"))
    envs.reset(seed=0)
    envs.action_space.seed(0)
    lengths = []
    for _ in range(100):
        *_, info = envs.step(envs.action_space.sample())
        if "episode" in info:
            ended = info["_episode"]
            np.testing.assert_array_equal(info["episode"]["r"][ended],
                                          info["episode"]["l"][ended])
            lengths.extend(info["episode"]["l"][ended].tolist())
    assert len(lengths) >= NUM_ENVS and all(8 <= n < 100 for n in lengths)


def test_a_kernel_backend_steps_as_the_reference_does(backend):
    envs = {b: GymnasiumVectorEnv(Pendulum(episode_length=4), 2, b) for b in ("numpy", backend)}
    results = {b: [e.reset(seed=2)[0]] for b, e in envs.items()}
    actions = np.random.default_rng(0).uniform(-2, 2, (6, 2, 1)).astype(np.float32)
    for b, e in envs.items():
        results[b] += [part for a in actions for part in e.step(a)[:4]]
    tolerance = Pendulum.tolerance  # what the consistency check allows the kernels
    for got, want in zip(results[backend], results["numpy"], strict=True):
        np.testing.assert_allclose(got, want, rtol=tolerance.rtol, atol=tolerance.atol,
                                   err_msg=tolerance.why)


@pytest.mark.parametrize("make, message", [
    (lambda: GymnasiumVectorEnv(TagGrid(num_taggers=1, num_runners=2, num_nearest=2), 2,
                                "numpy"), "TorchRLEnv"),
    (lambda: GymnasiumEnv("tag_continuous", "numpy"), "TorchRLEnv"),
    (lambda: GymnasiumVectorEnv("cartpole", 2, "numpy", autoreset_mode="later"),
     "not one of gymnasium's"),
    (lambda: GymnasiumVectorEnv(3.5, 2, "numpy"), "expected a wd_teach Env"),
    (lambda: GymnasiumVectorEnv("cartpole", 2, "numpy").step(np.array([1, 0, 1])),
     r"shape \(3,\)"),
    (lambda: GymnasiumVectorEnv("cartpole", 2, "numpy").step(np.array([1.0, 0.0])),
     "must be integers"),
    (lambda: GymnasiumVectorEnv("cartpole", 2, "numpy").step(np.array([1, 2])),
     "out of range"),
    (lambda: GymnasiumVectorEnv("pendulum", 2, "numpy").step(np.array([[1], [0]])),
     "must be floats"),
    (lambda: GymnasiumVectorEnv("pendulum", 2, "numpy").step(np.array([[0.5], [9.0]])),
     "outside"),
    (lambda: GymnasiumVectorEnv("cartpole", 2, "numpy").reset(options={"reset_mask": [1, 0]}),
     "numpy bool array"),
    (lambda: GymnasiumVectorEnv("cartpole", 2, "numpy").reset(seed=-1), "seed"),
])
def test_bad_input_gets_a_clear_error(make, message):
    with pytest.raises(EnvError, match=message):
        make()
