"""Every env on every backend: the kernels agree with the NumPy reference, finished
environments restart on the device, and bad configs and actions are refused with a clear
message. Small sizes: the Numba kernels run on the CUDA simulator here."""

import inspect

import numpy as np
import pytest
import torch

import wd_teach
from wd_teach import LaunchError, MissingPieceError, cuda_c
from wd_teach.device import nvcc_path
from wd_teach.env import Env
from wd_teach.env.consistency import check_consistency, random_action_sequence
from wd_teach.env.registry import find_env, shipped_envs
from wd_teach.env.wrapper import EnvWrapper
from wd_teach.errors import EnvError
from wd_teach_envs.cartpole import CartPole
from wd_teach_envs.pendulum import Pendulum
from wd_teach_envs.tag_continuous import TagContinuous
from wd_teach_envs.tag_grid import TagGrid

#: Small games in which, within STEPS steps, runners are caught and episodes end (by time,
#: and in the grid also by the last runner caught): every branch of the steps runs.
SMALL_ENVS = {
    "tag_continuous": (TagContinuous(num_taggers=2, num_runners=5, num_nearest=3,
                                     field_size=4.0, tagging_distance=1.2, episode_length=5),
                       {}),
    "tag_continuous_full_obs_two_blocks": (
        TagContinuous(num_taggers=2, num_runners=5, num_nearest=None, field_size=4.0,
                      tagging_distance=1.2, episode_length=5, runner_exits_when_tagged=False),
        {"max_threads": 4}),
    "tag_grid": (TagGrid(num_taggers=2, num_runners=3, num_nearest=2, grid_size=3,
                         episode_length=6), {}),
    "cartpole": (CartPole(episode_length=6), {}),
    "pendulum": (Pendulum(episode_length=6), {}),
}
#: Every other env folder that ships, at its defaults with short episodes: a new env is
#: checked here the moment its folder exists.
SMALL_ENVS.update({name: (find_env(name).env_class(episode_length=6), {})
                   for name in shipped_envs() if name not in SMALL_ENVS})
STEPS = 8
NUM_ENVS = 2


@pytest.mark.parametrize("name", SMALL_ENVS)
def test_backend_agrees_with_the_reference(name, backend):
    env, options = SMALL_ENVS[name]
    report = check_consistency(env, ["numpy", backend], num_envs=NUM_ENVS, steps=STEPS,
                               **options)
    assert report.ok, report.table()
    assert "agrees with numpy at every step" in report.table()


@pytest.mark.parametrize("name", ["tag_continuous", "tag_continuous_full_obs_two_blocks",
                                  "tag_grid"])
def test_small_tag_games_reach_every_branch(name):
    """The consistency test above is only as good as what its steps do: runners are caught
    and episodes end within its steps."""
    env, _ = SMALL_ENVS[name]
    wrapper = EnvWrapper(env, NUM_ENVS, "numpy")
    caught = ended = 0
    for actions in random_action_sequence(env, NUM_ENVS, STEPS):
        _, rewards, done, _ = wrapper.step(actions)
        caught += int((rewards[:, env.num_taggers:] <= env.config.tag_penalty / 2).sum())
        ended += int(done.sum())
    assert caught > 0 and ended > 0


@pytest.mark.parametrize("name", SMALL_ENVS)
def test_kernels_are_twins(name):
    """Each CUDA C kernel has a Numba kernel of the same name taking the same parameters,
    in the same order: the launcher binds both from the same store."""
    env, _ = SMALL_ENVS[name]
    c_kernels = {}
    for source in env.cuda_sources():
        c_kernels.update(cuda_c.kernel_signatures(cuda_c.read_source(source)))
    numba_module = env.numba_kernels()
    for kernel in env.step_kernels:
        c_params = [p.name for p in c_kernels[kernel]]
        numba_params = list(inspect.signature(getattr(numba_module, kernel).py_func).parameters)
        assert c_params == numba_params, kernel


@pytest.mark.parametrize("name", SMALL_ENVS)
def test_done_environments_restart_and_the_others_run_on(name, backend):
    env, options = SMALL_ENVS[name]
    wrapper = EnvWrapper(env, NUM_ENVS, backend, auto_reset=False, **options)
    for actions in random_action_sequence(env, NUM_ENVS, 2):
        wrapper.step(actions)
    before = {n: wrapper.store.pull(n) for n in wrapper.store.reset_names}
    wrapper.store["done"][0] = 1  # as if env 0 had ended in this step
    wrapper.reset_done()
    for n, values in before.items():
        np.testing.assert_array_equal(wrapper.store.pull(n)[0],
                                      wrapper.store.pristine(n).cpu().numpy()[0], err_msg=n)
        np.testing.assert_array_equal(wrapper.store.pull(n)[1], values[1], err_msg=n)
    assert wrapper.store.pull("done").tolist() == [0, 0]


def test_auto_reset_returns_the_done_flags_and_the_next_first_observation():
    env = CartPole(episode_length=3)
    wrapper = EnvWrapper(env, NUM_ENVS, "numpy")
    first = wrapper.reset().clone()
    for _ in range(3):
        obs, rewards, done, info = wrapper.step(np.ones((NUM_ENVS, 1), np.int32))
    assert done.tolist() == [True, True] and info["truncated"].tolist() == [True, True]
    torch.testing.assert_close(obs, first)  # the next episode's first observation
    assert wrapper.store.pull("timestep").tolist() == [0, 0]
    assert rewards.tolist() == [[1.0], [1.0]]


def test_random_actions_fit_the_action_space():
    for env, _ in SMALL_ENVS.values():
        wrapper = EnvWrapper(env, NUM_ENVS, "numpy")
        actions = wrapper.random_actions()
        assert tuple(actions.shape) == env.action_shape(NUM_ENVS)
        wrapper.put_actions(actions)  # checked at the door: in range, right dtype


# -- bad actions ---------------------------------------------------------------------------


def tag_wrapper():
    return EnvWrapper(SMALL_ENVS["tag_continuous"][0], NUM_ENVS, "numpy")


def test_actions_of_the_wrong_shape_are_refused():
    with pytest.raises(EnvError, match=r"actions have shape \(2, 7\), but 2 envs of 7 agents "
                                       r".* take \(2, 7, 2\)"):
        tag_wrapper().step(torch.zeros((2, 7), dtype=torch.int32))


def test_actions_of_the_wrong_dtype_are_refused():
    with pytest.raises(EnvError, match=r"actions are torch.int64, but the kernels read "
                                       r"integers as torch.int32: convert with "
                                       r"\.to\(torch.int32\)"):
        tag_wrapper().step(torch.zeros((2, 7, 2), dtype=torch.int64))
    with pytest.raises(EnvError, match=r"numpy: \.astype\(np.float32\)"):
        EnvWrapper(Pendulum(), 1, "numpy").step(np.zeros((1, 1, 1)))


def test_actions_out_of_range_are_refused_with_where_they_are():
    actions = torch.zeros((2, 7, 2), dtype=torch.int32)
    actions[1, 4, 1] = 7
    with pytest.raises(EnvError, match="action 7 of env 1, agent 4 is out of range: head 1 "
                                       "has 7 actions, 0 to 6"):
        tag_wrapper().step(actions)
    with pytest.raises(EnvError, match="action -1 of env 0, agent 0 is out of range: has 2 "
                                       "actions, 0 to 1"):
        EnvWrapper(CartPole(), 1, "numpy").step(np.full((1, 1), -1, np.int32))


@pytest.mark.parametrize("value, message", [
    (2.5, r"action 2.5 of env 0, agent 0 is outside \[-2, 2\]. Clip continuous actions"),
    (float("nan"), r"action nan of env 0, agent 0 is outside \[-2, 2\]"),
])
def test_continuous_actions_out_of_range_are_refused(value, message):
    with pytest.raises(EnvError, match=message):
        EnvWrapper(Pendulum(), 1, "numpy").step(np.full((1, 1, 1), value, np.float32))


def test_actions_that_are_not_arrays_are_refused():
    with pytest.raises(EnvError, match="actions must be a torch tensor or a numpy array, "
                                       "got list"):
        EnvWrapper(CartPole(), 1, "numpy").step([[1]])


# -- configs that cannot work ----------------------------------------------------------------


@pytest.mark.parametrize("make, message", [
    (lambda: TagContinuous(num_runners=0), "Tag needs at least one runner, got num_runners=0"),
    (lambda: TagGrid(num_taggers=0), "Tag needs at least one tagger"),
    (lambda: TagContinuous(tagging_distance=-0.5), "tagging_distance must be >= 0, got -0.5"),
    (lambda: TagContinuous(num_nearest=200), "num_nearest must be between 1 and 16"),
    (lambda: TagContinuous(num_taggers=1, num_runners=2, num_nearest=3),
     "num_nearest must be between 1 and 2"),
    (lambda: TagContinuous(turns=(0, 80)), "turns must be whole numbers of compass points"),
    (lambda: TagContinuous(field_size=0.0), "field_size must be positive"),
    (lambda: TagContinuous(tag_reward=float("inf")), "tag_reward must be a finite number"),
    (lambda: TagGrid(grid_size=1), "grid_size must be a whole number of at least 2"),
    (lambda: TagContinuous(speed=3), "TagContinuousConfig has no field 'speed'"),
    (lambda: CartPole(tau=0.0), "tau must be positive"),
    (lambda: Pendulum(episode_length=0), "episode_length must be at least 1"),
])
def test_configs_that_cannot_work_are_refused(make, message):
    with pytest.raises(EnvError, match=message):
        make()


def test_more_agents_than_a_grid_can_hold_are_refused_before_anything_is_made():
    env = TagContinuous(num_runners=70_000_000)
    with pytest.raises(LaunchError, match="at most 67,107,840 agents"):
        EnvWrapper(env, 1, "numpy")


def test_arrays_too_large_for_int_indexes_are_refused_before_anything_is_made():
    env = TagContinuous(num_nearest=None)  # 110 agents see 109 others: 770 floats each
    with pytest.raises(EnvError, match="'obs' would hold 2,541,000,000 values, more than the "
                                       "2,147,483,647 that kernels index with int"):
        EnvWrapper(env, 30_000, "numpy")


@pytest.mark.parametrize("num_envs", [0, -1, 2.5])
def test_bad_numbers_of_envs_are_refused(num_envs):
    with pytest.raises((EnvError, LaunchError), match="num_envs|environments"):
        EnvWrapper(CartPole(), num_envs, "numpy")


def test_unknown_backends_and_non_envs_are_refused():
    with pytest.raises(MissingPieceError, match="unknown backend 'jax'"):
        EnvWrapper(CartPole(), 1, "jax")
    with pytest.raises(EnvError, match="EnvWrapper wraps a wd_teach Env, got str"):
        EnvWrapper("CartPole-v1", 1, "numpy")


def test_an_env_must_make_its_first_observation():
    class NoObs(CartPole):
        def initial_state(self, num_envs, rng):
            state = super().initial_state(num_envs, rng)
            del state["obs"]
            return state

    with pytest.raises(EnvError, match=r"initial_state\(\) must return the first observation"):
        EnvWrapper(NoObs(), 1, "numpy")


@pytest.mark.skipif("pycuda" in wd_teach.discover().backends, reason="this machine runs PyCUDA")
def test_pycuda_without_a_gpu_says_so():
    with pytest.raises(MissingPieceError, match="the pycuda backend runs CUDA C on an NVIDIA GPU"):
        EnvWrapper(CartPole(), 1, "pycuda")


# -- float determinism -----------------------------------------------------------------------


@pytest.mark.skipif(nvcc_path() is None, reason="nvcc is not on this machine")
@pytest.mark.parametrize("name", ["tag_continuous", "tag_grid"])
def test_tag_kernels_never_fuse_multiply_adds_or_widen_to_double(name):
    """What makes Tag bit-exact across backends, seen in the PTX nvcc makes."""
    env, _ = SMALL_ENVS[name]
    for source in env.cuda_sources():
        ptx = cuda_c.ptx(source, extra_include_dirs=env.include_dirs())
        assert "fma.rn.f32" not in ptx and "mul.f64" not in ptx and "add.f64" not in ptx


def test_every_env_folder_has_the_same_files():
    from pathlib import Path

    import wd_teach_envs

    root = Path(wd_teach_envs.__file__).parent
    folders = [p for p in root.iterdir() if p.is_dir() and not p.name.startswith(("_", "."))]
    assert len(folders) >= 4
    for folder in folders:
        for name in ("env.py", "step.cu", "step_numba.py", "reference.py", "config.yaml"):
            assert (folder / name).is_file(), f"{folder.name}/{name}"
    assert all(issubclass(env.__class__, Env) for env, _ in SMALL_ENVS.values())
