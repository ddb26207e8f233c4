"""DataStore: what goes in, what comes out, and the clear errors at the door."""

import numpy as np
import pytest
import torch

from wd_teach import DataStore, StoreError


def make_store(envs=3, agents=4, **kw):
    return DataStore(num_envs=envs, num_agents=agents, episode_length=7, **kw)


def test_push_keeps_values_and_layout():
    store = make_store()
    pos = np.arange(12, dtype=np.float32).reshape(3, 4)
    store.push("pos", pos, per="agent")
    store.push("done", np.zeros(3, np.int32), per="env")
    store.push("table", np.ones(5, np.uint8), per="shared")
    np.testing.assert_array_equal(store.pull("pos"), pos)
    assert store["pos"].dtype == torch.float32
    assert store.names == ["pos", "done", "table"]
    assert store.info("done").per == "env"
    assert (store.num_envs, store.num_agents, store.episode_length) == (3, 4, 7)
    assert store.constant("num_agents") == 4


def test_push_copies_so_the_host_array_is_free():
    store = make_store()
    pos = np.zeros((3, 4), np.float32)
    store.push("pos", pos)
    pos[:] = 5
    assert store.pull("pos").max() == 0


def test_pull_is_a_copy_to_look_at():
    store = make_store()
    store.push("pos", np.zeros((3, 4), np.float32))
    looked = store.pull("pos")
    looked[:] = 9
    assert store.pull("pos").max() == 0


def test_writes_through_the_tensor_are_writes_to_the_store():
    store = make_store()
    store.push("pos", np.zeros((3, 4), np.float32))
    store["pos"].add_(2)
    assert store.pull("pos").min() == 2


def test_reset_arrays_keep_a_pristine_copy_and_restore_on_device():
    store = make_store()
    start = np.random.default_rng(0).normal(size=(3, 4, 2)).astype(np.float32)
    store.push("pos", start, reset=True)
    store.push("score", np.zeros((3, 4), np.float32))
    store["pos"].mul_(3)
    store["score"].add_(1)
    store.restore()
    np.testing.assert_array_equal(store.pull("pos"), start)
    assert store.pull("score").min() == 1  # not a reset array: untouched
    assert store.reset_names == ["pos"]
    assert store.pristine("pos").data_ptr() != store["pos"].data_ptr()


def test_constants_are_typed_for_kernels():
    store = make_store()
    store.set_constant("dt", 0.1)
    store.set_constant("steps", 5)
    assert store.constant("dt").dtype == np.float32
    assert store.constant("steps").dtype == np.int32


def test_torch_tensors_can_be_pushed():
    store = make_store()
    store.push("pos", torch.ones(3, 4))
    assert store.pull("pos").sum() == 12


def test_summary_lists_every_array_and_constant():
    store = make_store()
    store.push("pos", np.zeros((3, 4), np.float32), reset=True)
    text = store.summary()
    assert "pos" in text and "reset" in text and "num_envs" in text


# -- bad input: each gets an error that says what was wrong and what to do -----------------

BAD_PUSHES = [
    (lambda s: s.push("pos", np.zeros((3, 4))), "float64.*astype\\(np.float32\\)"),
    (lambda s: s.push("pos", np.zeros((3, 4), np.int64)), "int64.*astype\\(np.int32\\)"),
    (lambda s: s.push("pos", np.zeros((3, 4), bool)), "bool.*uint8"),
    (lambda s: s.push("pos", np.zeros((3, 4), np.complex64)), "complex64"),
    (lambda s: s.push("pos", np.zeros((4, 3), np.float32)),
     "shape \\(4, 3\\).*num_envs x num_agents"),
    (lambda s: s.push("pos", np.zeros((2,), np.float32), per="env"), "shape \\(2,\\).*num_envs"),
    (lambda s: s.push("pos", np.zeros((4, 3), np.float32).T), "not C-contiguous"),
    (lambda s: s.push("pos", torch.zeros(4, 3).T), "not contiguous"),
    (lambda s: s.push("pos", [[0.0] * 4] * 3), "numpy array or a torch tensor"),
    (lambda s: s.push("pos", np.float32(1)), "shape \\(\\)"),
    (lambda s: s.push("pos", np.zeros((3, 0), np.float32)), "at least one"),
    (lambda s: s.push("my pos", np.zeros((3, 4), np.float32)), "not a valid name"),
    (lambda s: s.push("class", np.zeros((3, 4), np.float32)), "not a valid name"),
    (lambda s: s.push("pos", np.zeros((3, 4), np.float32), per="agents"), "per='agents'"),
    (lambda s: s.push("num_envs", np.zeros((3, 4), np.float32)), "already in the store"),
    (lambda s: s.set_constant("dt", "0.1"), "int or a float"),
    (lambda s: s.set_constant("dt", float("nan")), "finite"),
    (lambda s: s.set_constant("big", 2**40), "int32"),
    (lambda s: s["nope"], "no array named 'nope'"),
    (lambda s: s["num_envs"], "It is a constant"),
    (lambda s: s.constant("nope"), "no constant named"),
]


@pytest.mark.parametrize("call, message", BAD_PUSHES)
def test_bad_input_is_refused_with_a_clear_error(call, message):
    store = make_store()
    with pytest.raises(StoreError, match=message):
        call(store)
    assert store.names == []  # nothing half-pushed


def test_duplicate_name_is_refused():
    store = make_store()
    store.push("pos", np.zeros((3, 4), np.float32))
    with pytest.raises(StoreError, match="already in the store"):
        store.push("pos", np.ones((3, 4), np.float32))
    assert store.pull("pos").max() == 0


def test_pushing_after_freeze_is_refused():
    store = make_store()
    store.freeze()
    with pytest.raises(StoreError, match="frozen"):
        store.push("pos", np.zeros((3, 4), np.float32))
    with pytest.raises(StoreError, match="frozen"):
        store.set_constant("dt", 0.1)


def test_pristine_needs_reset_flag():
    store = make_store()
    store.push("pos", np.zeros((3, 4), np.float32))
    with pytest.raises(StoreError, match="reset=True"):
        store.pristine("pos")


@pytest.mark.parametrize("kw, message", [
    ({"num_envs": 0}, "num_envs must be a positive"),
    ({"num_agents": 2.5}, "num_agents must be a positive"),
    ({"num_agents": True}, "num_agents must be a positive"),
    ({"num_envs": 2**31}, "int32"),
])
def test_bad_sizes_are_refused(kw, message):
    args = {"num_envs": 2, "num_agents": 2, **kw}
    with pytest.raises(StoreError, match=message):
        DataStore(**args)


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the message on a machine with no GPU")
def test_cuda_device_without_gpu_is_refused():
    with pytest.raises(StoreError, match="torch sees no CUDA GPU"):
        DataStore(2, 2, device="cuda")
