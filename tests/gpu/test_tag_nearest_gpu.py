"""The Tag games' nearest-neighbour search on a GPU, both backends, at the headline's number
of agents (1,000 an env) and past one block (2,048 agents: every block of an env builds the
env's whole grid; the tiled search also at 2,500, past the grid's limit): the tiled search
and the grid both give tag_reference.neighbors' slots, bit for bit, on a random field and
on whole-number places full of ties. The CPU twin, on Numba's simulator:
tests/test_tag_nearest.py."""

import pytest
from test_tag_nearest import GRIDS, METHODS, check, field

from wd_teach.device import BACKENDS as KERNEL_BACKENDS


@pytest.mark.parametrize("backend", KERNEL_BACKENDS)
@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("agents", [1000, 2048])
def test_both_searches_find_the_references_slots_at_full_size(backend, method, agents):
    check(*field(8, agents, seed=agents), 10, backend, method, field_size=20.0)


@pytest.mark.parametrize("backend", KERNEL_BACKENDS)
def test_the_tiled_search_takes_games_past_the_grids_limit(backend):
    check(*field(2, 2500, seed=5), 10, backend, "tiles", field_size=20.0)


@pytest.mark.parametrize("backend", KERNEL_BACKENDS)
@pytest.mark.parametrize("method", GRIDS)
@pytest.mark.parametrize("side", [3, 22])
def test_ties_go_to_the_lower_index_on_the_gpu(backend, side, method):
    loc_x, loc_y, in_game = field(4, 1000, seed=side, whole=True, size=8.0)
    check(loc_x, loc_y, in_game, 16, backend, method, grid_side=side, field_size=8.0)
