"""Tag's NumPy reference finds the nearest neighbours as a stable sort of the whole distance
table would, a slice of envs at a time (envs/_tag/tag_reference.py): a game of 1,000 agents
in 2,000 envs would otherwise need a table of 2e9 distances at once."""

import numpy as np
import pytest

from wd_teach_envs._tag import tag_reference


def stable_sort_neighbors(loc_x, loc_y, in_game, k):
    """The definition: every distance, a stable argsort of each row, its first k."""
    agents = loc_x.shape[1]
    dx = loc_x[:, None, :] - loc_x[:, :, None]
    dy = loc_y[:, None, :] - loc_y[:, :, None]
    away = (in_game[:, None, :] == 0) | np.eye(agents, dtype=bool)
    d2 = np.where(away, np.inf, dx * dx + dy * dy)
    order = np.argsort(d2, axis=2, kind="stable")[:, :, :k]
    return np.where(np.take_along_axis(d2, order, axis=2) < np.inf, order, -1)


@pytest.mark.parametrize("envs, agents, k", [(40, 30, 5), (9, 17, 16), (12, 6, 5), (3, 2, 1),
                                             (5, 200, 10)])
@pytest.mark.parametrize("table", [1 << 24, 64])  # one slice, or a few envs at a time
def test_the_nearest_are_those_a_stable_sort_finds(monkeypatch, envs, agents, k, table):
    monkeypatch.setattr(tag_reference, "TABLE_SIZE", table)
    rng = np.random.default_rng(envs * agents + k)
    # Whole-number places on a small field: many agents at equal distances, and some out.
    loc_x = rng.integers(0, 4, (envs, agents)).astype(np.float32)
    loc_y = rng.integers(0, 4, (envs, agents)).astype(np.float32)
    in_game = (rng.random((envs, agents)) < 0.7).astype(np.int32)
    got = tag_reference.neighbors(loc_x, loc_y, in_game, k, full_observation=0)
    np.testing.assert_array_equal(got, stable_sort_neighbors(loc_x, loc_y, in_game, k))
    if k >= agents // 2:  # about a third are out: some rows have fewer than k others in
        assert (got == -1).any()


def test_smallest_first_orders_by_distance_then_index():
    d2 = np.array([[2.0, 1.0, 1.0, 0.0, np.inf, 1.0]], np.float32)
    np.testing.assert_array_equal(tag_reference.smallest_first(d2, 4), [[3, 1, 2, 5]])
    np.testing.assert_array_equal(tag_reference.smallest_first(d2, 6), [[3, 1, 2, 5, 0, 4]])
    with pytest.raises(TypeError, match="float32"):
        tag_reference.smallest_first(d2.astype(np.float64), 4)
