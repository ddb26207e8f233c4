"""The Tag games' initial neighbours on a GPU (envs/_tag/fast.py's initial_neighbors, which
game.py calls behind the fast door): tag_reference.neighbors' slots, bit for bit, at 1,000
agents an env and in slices of envs, with ties. On the CPU: tests/test_tag_initial_state.py."""

import numpy as np
import pytest
import torch

from wd_teach_envs._tag import fast, tag_reference

pytestmark = pytest.mark.gpu


@pytest.mark.parametrize("whole", [False, True])
def test_the_initial_neighbours_on_the_gpu_are_the_references(whole, monkeypatch):
    assert torch.cuda.is_available()
    monkeypatch.setattr(fast, "GPU_TABLE_SIZE", 3 * 1000 * 1000)  # three envs a slice
    rng = np.random.default_rng(int(whole))
    shape = (8, 1000)
    if whole:  # 400 points for 1,000 agents: distances tie, agents share a point
        loc_x, loc_y = (rng.integers(0, 20, shape).astype(np.float32) for _ in "xy")
    else:
        loc_x, loc_y = (rng.uniform(0, 20, shape).astype(np.float32) for _ in "xy")
    in_game = (rng.random(shape) >= 0.3).astype(np.int32)
    want = tag_reference.neighbors(loc_x, loc_y, in_game, 10, full_observation=0)
    np.testing.assert_array_equal(fast.initial_neighbors(loc_x, loc_y, in_game, 10), want)
