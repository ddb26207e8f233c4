"""Resetting done environments: only those change, and exactly back to their start."""

import numpy as np
import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from wd_teach import DataStore, ResetError, Resetter, Sampler, StoreError
from wd_teach.reset.reference import reference_reset

DTYPES = [np.float32, np.int32, np.uint32, np.uint8]


def random_values(rng, shape, dtype):
    if np.dtype(dtype).kind == "f":
        return rng.normal(size=shape).astype(dtype)
    return rng.integers(0, np.iinfo(dtype).max, size=shape, dtype=np.int64).astype(dtype)


def scramble(store, names, rng):
    """What steps would do: every value of every array changes (on the device)."""
    for name in names:
        info = store.info(name)
        store[name].copy_(torch.from_numpy(random_values(rng, info.shape, info.dtype)))


@st.composite
def worlds(draw):
    """A store shape, arrays of every dtype and layout, and done flags."""
    envs = draw(st.integers(1, 4))
    agents = draw(st.integers(1, 5))
    arrays = []
    for i in range(draw(st.integers(1, 4))):
        per = draw(st.sampled_from(["env", "agent"]))
        extra = tuple(draw(st.lists(st.integers(1, 3), max_size=2)))
        shape = (envs, *extra) if per == "env" else (envs, agents, *extra)
        arrays.append((f"a{i}", per, shape, draw(st.sampled_from(DTYPES))))
    done = draw(st.lists(st.integers(0, 1), min_size=envs, max_size=envs))
    max_threads = draw(st.sampled_from([1024, 2]))  # 2: several blocks per environment
    return envs, agents, arrays, np.array(done, np.int32), max_threads, draw(st.integers(0, 99))


@settings(max_examples=12, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(world=worlds())
def test_only_done_envs_change_and_exactly_to_their_start(backend, world):
    envs, agents, arrays, done, max_threads, seed = world
    rng = np.random.default_rng(seed)
    store = DataStore(envs, agents)
    for name, per, shape, dtype in arrays:
        store.push(name, random_values(rng, shape, dtype), per=per, reset=True)
    store.push("untracked", np.zeros((envs, agents), np.float32))
    resetter = Resetter(store, backend=backend, max_threads=max_threads)
    names = [a[0] for a in arrays]
    assert resetter.names == names

    scramble(store, [*names, "untracked"], rng)
    before = {name: store.pull(name) for name in names}
    untracked = store.pull("untracked")
    resetter.done.copy_(torch.from_numpy(done))
    resetter.reset()

    pristine = {name: store.pristine(name).cpu().numpy() for name in names}
    want = reference_reset(before, pristine, done)
    for name in names:
        np.testing.assert_array_equal(store.pull(name), want[name], err_msg=name)
    np.testing.assert_array_equal(store.pull("untracked"), untracked)
    assert (store.pull("done") == 0).all()


def make_world(backend="numba", **kw):
    store = DataStore(3, 4)
    store.push("pos", np.arange(24, dtype=np.float32).reshape(3, 4, 2), reset=True)
    store.push("steps", np.zeros(3, np.int32), per="env", reset=True)
    store.push("table", np.ones(5, np.float32), per="shared", reset=True)
    return store, Resetter(store, backend=backend, **kw)


def test_reset_all_restores_every_env_and_lowers_every_flag(backend):
    store, resetter = make_world(backend)
    assert resetter.names == ["pos", "steps"]  # shared arrays have no row per env
    store["pos"].mul_(-1)
    store["steps"].fill_(7)
    resetter.reset_all()
    np.testing.assert_array_equal(store.pull("pos"), store.pristine("pos").cpu().numpy())
    assert (store.pull("steps") == 0).all() and (store.pull("done") == 0).all()


def test_with_no_env_done_nothing_changes(backend):
    store, resetter = make_world(backend)
    store["steps"].fill_(3)
    resetter.reset()
    assert (store.pull("steps") == 3).all()


def test_episodes_ending_at_different_steps_restart_on_their_own(backend):
    store, resetter = make_world(backend)
    lengths = torch.tensor([2, 3, 5], dtype=torch.int32, device=store.device)
    for _ in range(6):  # a step: count, and raise the flag when the episode is over
        store["steps"].add_(1)
        store["done"].copy_((store["steps"] >= lengths).int())
        resetter.reset()
    np.testing.assert_array_equal(store.pull("steps"), [0, 0, 1])


def test_the_random_draw_counts_are_not_reset(backend):
    store = DataStore(2, 3)
    store.push("pos", np.zeros((2, 3), np.float32), reset=True)
    sampler = Sampler(store, 2, backend=backend)
    resetter = Resetter(store, backend=backend)
    sampler.sample(torch.full((2, 3, 2), 0.5, device=store.device))
    resetter.reset_all()
    assert (store.pull("rng_counter") == 1).all()  # a new episode draws new numbers


def test_a_done_array_the_env_pushed_is_used():
    store = DataStore(3, 4)
    store.push("pos", np.zeros((3, 4), np.float32), reset=True)
    store.push("finished", np.array([0, 1, 0], np.int32), per="env")
    resetter = Resetter(store, done="finished")
    store["pos"].fill_(1)
    resetter.reset()
    np.testing.assert_array_equal(store.pull("pos").sum(axis=1), [4, 0, 4])
    assert repr(resetter) == f"Resetter({resetter.backend}, restores pos where 'finished' is set)"


def test_share_pristine_lists_the_same_memory_under_a_name():
    store = DataStore(2, 2)
    store.push("pos", np.ones((2, 2), np.float32), reset=True)
    name = store.share_pristine("pos")
    assert name == "pos_pristine" and store.share_pristine("pos") == name
    assert store[name] is store.pristine("pos")
    assert store.info(name).shape == (2, 2) and not store.info(name).reset
    assert store.reset_names == ["pos"]
    store.push("vel", np.ones((2, 2), np.float32))
    with pytest.raises(StoreError, match="without reset=True"):
        store.share_pristine("vel")
    with pytest.raises(StoreError, match="no array named 'nope'"):
        store.share_pristine("nope")
    store.push("acc", np.ones((2, 2), np.float32), reset=True)
    store.freeze()
    with pytest.raises(StoreError, match="frozen"):
        store.share_pristine("acc")


def push_done(array, per="env"):
    def setup(store):
        store.push("done", array, per=per)
    return setup


@pytest.mark.parametrize("setup, kwargs, message", [
    (push_done(np.zeros(3, np.uint8)), {}, r"'done' are uint8 \(3,\) per='env'.*int32"),
    (push_done(np.zeros(3, np.float32)), {}, "float32"),
    (push_done(np.zeros((3, 4), np.int32), per="agent"), {}, r"\(3, 4\) per='agent'"),
    (push_done(np.zeros(5, np.int32), per="shared"), {}, "per='shared'"),
    (lambda s: s.set_constant("done", 0), {}, "is a constant"),
    (None, {"names": ["nope"]}, "no array named 'nope'"),
    (None, {"names": ["vel"]}, "without reset=True"),
    (None, {"names": ["table"]}, "per='shared'"),
    (push_done(np.zeros(3, np.int32)), {"names": ["done"]}, "holds the done flags"),
    (lambda s: s.set_constant("pos_row_length", 3), {}, "'pos_row_length' is 3"),
])
def test_bad_set_ups_are_refused(setup, kwargs, message):
    store = DataStore(3, 4)
    store.push("pos", np.zeros((3, 4, 2), np.float32), reset=True)
    store.push("vel", np.zeros((3, 4), np.float32))
    store.push("table", np.zeros(5, np.float32), per="shared", reset=True)
    if setup:
        setup(store)
    with pytest.raises(ResetError, match=message):
        Resetter(store, backend="numba", **kwargs)


def test_a_resetter_needs_a_store_that_is_not_yet_frozen():
    with pytest.raises(ResetError, match="needs a DataStore"):
        Resetter("store")
    store = DataStore(3, 4)
    store.push("pos", np.zeros((3, 4), np.float32), reset=True)
    store.freeze()
    with pytest.raises(StoreError, match="frozen"):
        Resetter(store)
