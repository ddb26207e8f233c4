"""The fenced store that shows a missing guard on a GPU (wd_teach.exercises.fence).

On the simulator a spare thread's write past an array raises, so the checkers' fenced launch
is only ever reached by right kernels here: these tests give the fence itself something to
find, by writing past a view as a spare thread's flat index does, and check that a right
kernel launched on a fenced store leaves every fence whole and computes what it would on a
plain one. tests/gpu/test_fence_gpu.py shows the wrong kernels caught on a GPU.
"""

import numpy as np
import pytest
import torch
from exercise_answers import make_parking_step

from wd_teach.data import DataStore
from wd_teach.env.wrapper import EnvWrapper
from wd_teach.exercises import lesson_05
from wd_teach.exercises.fence import FencedStore, spare_threads_stay_inside
from wd_teach.launch import KernelLauncher
from wd_teach.lessons.demo import move as right_move


def small_store() -> DataStore:
    store = DataStore(num_envs=3, num_agents=5, device="cpu")
    rng = np.random.default_rng(0)
    store.push("pos", rng.uniform(-1, 1, (3, 5)).astype(np.float32), reset=True)
    store.push("obs", rng.uniform(-1, 1, (3, 5, 2)).astype(np.float32))
    store.push("steps", np.arange(3, dtype=np.int32), per="env")
    store.set_constant("dt", 0.25)
    return store


def past_the_end(tensor: torch.Tensor, extra: int) -> torch.Tensor:
    """The `extra` numbers after `tensor` in its storage: where a spare thread of the last
    environment writes when its kernel has no guard."""
    return torch.as_strided(tensor, (tensor.numel() + extra,), (1,))[tensor.numel():]


def test_a_fenced_copy_holds_the_same_arrays_and_constants():
    store = small_store()
    fenced = FencedStore.copy_of(store)
    assert fenced.names == store.names
    assert fenced.constants == store.constants
    for name in store.names:
        assert fenced.info(name) == store.info(name)
        assert torch.equal(fenced[name], store[name])
        assert fenced[name].is_contiguous()
    assert torch.equal(fenced.pristine("pos"), store.pristine("pos"))
    assert fenced.trampled() == []


@pytest.mark.parametrize("name, value", [("pos", 0.5), ("obs", -3.0), ("steps", 7)])
def test_a_write_one_past_the_end_tramples_that_arrays_fence(name, value):
    fenced = FencedStore.copy_of(small_store())
    past_the_end(fenced[name], 1)[0] = value
    assert fenced.trampled() == [name]


def test_each_fence_is_one_environment_long():
    """A spare thread writes at most one environment's worth past the end (its agent index is
    under twice the agents): all of it is fenced."""
    fenced = FencedStore.copy_of(small_store())
    past_the_end(fenced["obs"], 10)[9] = 1.0  # the last number of the fence: 5 agents x 2
    assert fenced.trampled() == ["obs"]


def test_a_right_kernel_leaves_every_fence_whole(capsys):
    store = DataStore(2, 5)
    store.push("pos", np.ones((2, 5), np.float32))
    store.push("vel", np.full((2, 5), 2.0, np.float32))
    store.set_constant("dt", 0.5)
    assert spare_threads_stay_inside(store, "numba", right_move, "here", "hint",
                                     max_threads=3, guard_hint="guard it")
    assert capsys.readouterr().out == ""


def test_the_parking_step_runs_on_a_fenced_store_as_on_a_plain_one():
    """The fenced launch binds the learner's kernel by name like any other: one step of the
    right parking kernel, with spare threads, gives the plain store's numbers."""
    env = lesson_05.ParkingLine(make_parking_step(), "", num_particles=5)
    plain = EnvWrapper(env, 3, "numba", max_threads=3)
    plain.launcher.launch("parking_step")
    fenced = FencedStore.copy_of(EnvWrapper(env, 3, "numpy").store, plain.store.device)
    launcher = KernelLauncher(fenced, "numba", max_threads=3)
    launcher.load(env.numba_kernels())
    launcher.launch("parking_step")
    for name in fenced.names:
        assert torch.equal(fenced[name], plain.store[name]), name
    assert fenced.trampled() == []
