"""The Tag games' initial state behind the fast door: its neighbours found by
envs/_tag/fast.py's initial_neighbors (torch on the GPU, where game.py calls it; here torch
on the CPU, the same steps) are tag_reference.neighbors' slots, bit for bit, and so the whole
initial state is the one the plain floor makes, array for array. On a GPU:
tests/gpu/test_tag_initial_state_gpu.py."""

import numpy as np
import pytest

from wd_teach.floors import set_fast
from wd_teach_envs._tag import tag_reference
from wd_teach_envs._tag.fast import initial_neighbors
from wd_teach_envs.tag_continuous.env import TagContinuous
from wd_teach_envs.tag_grid.env import TagGrid


@pytest.mark.parametrize("whole", [False, True])
@pytest.mark.parametrize("envs, agents, k", [(3, 60, 10), (2, 17, 16), (5, 2, 1)])
def test_the_initial_neighbours_are_the_references(envs, agents, k, whole):
    """Random places, and whole-number ones where many distances tie and some agents share
    a point (ties go to the lower index); a fifth of the agents out of the game."""
    rng = np.random.default_rng(agents + k)
    if whole:
        loc_x, loc_y = (rng.integers(0, 5, (envs, agents)).astype(np.float32) for _ in "xy")
    else:
        loc_x, loc_y = (rng.uniform(0, 20, (envs, agents)).astype(np.float32) for _ in "xy")
    in_game = (rng.random((envs, agents)) >= 0.2).astype(np.int32)
    want = tag_reference.neighbors(loc_x, loc_y, in_game, k, full_observation=0)
    got = initial_neighbors(loc_x, loc_y, in_game, k, device="cpu")
    assert got.dtype == want.dtype and got.shape == want.shape
    np.testing.assert_array_equal(got, want)


def test_the_slices_of_envs_meet_without_a_seam(monkeypatch):
    """Envs are taken a slice at a time (a table's worth of distances): with a table of two
    envs, seven envs take four slices, and every env's slots are still its own."""
    from wd_teach_envs._tag import tag_reference as reference

    monkeypatch.setattr(reference, "TABLE_SIZE", 2 * 30 * 30)
    rng = np.random.default_rng(0)
    loc_x, loc_y = (rng.uniform(0, 9, (7, 30)).astype(np.float32) for _ in "xy")
    in_game = np.ones((7, 30), np.int32)
    want = np.stack([tag_reference.neighbors(loc_x[e:e + 1], loc_y[e:e + 1],
                                             in_game[e:e + 1], 5, 0)[0] for e in range(7)])
    np.testing.assert_array_equal(initial_neighbors(loc_x, loc_y, in_game, 5, "cpu"), want)


@pytest.mark.parametrize("env", [TagContinuous(num_taggers=5, num_runners=50),
                                 TagGrid(num_taggers=4, num_runners=40, num_nearest=6),
                                 TagContinuous(num_taggers=3, num_runners=20,
                                               num_nearest=None)],
                         ids=["continuous", "grid", "full observation"])
def test_the_fast_floor_makes_the_plain_floors_initial_state(env, monkeypatch):
    """game.py finds the initial neighbours with initial_neighbors on a GPU's fast floor;
    here a GPU is pretended and they are found on the CPU, by the same steps."""
    import torch

    from wd_teach_envs._tag import fast

    called = []

    def on_the_cpu(*args):
        called.append(args[-1])
        return initial_neighbors(*args, device="cpu")

    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(fast, "initial_neighbors", on_the_cpu)
    states = {}
    try:
        for on in (False, True):
            set_fast(on)
            states[on] = env.full_state(4, seed=11)
    finally:
        set_fast("reset")
    assert called == ([] if env.config.num_nearest is None else [env.num_neighbors])
    assert states[False].keys() == states[True].keys()
    for name, array in states[False].items():
        np.testing.assert_array_equal(array.data, states[True][name].data, err_msg=name)
