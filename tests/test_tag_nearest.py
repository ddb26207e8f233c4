"""The Tag games' nearest-neighbour search by itself (envs/_tag/nearest.cu and its Numba twin):
the tiled search the observe kernels do and the spatial grid meant to replace it for big
games both find tag_reference.neighbors' slots, bit for bit: on random fields, on whole-number
places full of ties (the grid meets agents out of index order, so ties are its hard case),
with agents out of the game, with fewer agents in the game than slots, with every agent on
one point, on any grid from one cell to many, and past the field's edge. Bad input is refused
before a kernel runs. The kernels run through bench/nearest.py's search(). Here on Numba's
simulator; tests/gpu/test_tag_nearest_gpu.py runs both backends on a GPU at the headline's
number of agents."""

import numpy as np
import pytest
from ptx_harness import compile_in_fresh_process

from wd_teach.errors import EnvError
from wd_teach_envs._tag import tag_reference


def _bench_nearest():
    """bench/nearest.py, whose search() runs either kernel from NumPy arrays."""
    import importlib.util
    from pathlib import Path

    path = Path(__file__).resolve().parents[1] / "bench" / "nearest.py"
    spec = importlib.util.spec_from_file_location("bench_nearest", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


nearest = _bench_nearest()
METHODS, NearestSearch, grid_side_for, search = (
    nearest.METHODS, nearest.NearestSearch, nearest.grid_side_for, nearest.search)
GRIDS = ("grid", "cells")  # the grid search, its agents given to threads by index or by cell


def field(envs, agents, seed, whole=False, size=20.0, out=0.2):
    rng = np.random.default_rng(seed)
    if whole:  # places 0..size: many agents at equal distances, some on one point
        loc_x = rng.integers(0, int(size) + 1, (envs, agents)).astype(np.float32)
        loc_y = rng.integers(0, int(size) + 1, (envs, agents)).astype(np.float32)
    else:
        loc_x = rng.uniform(0, size, (envs, agents)).astype(np.float32)
        loc_y = rng.uniform(0, size, (envs, agents)).astype(np.float32)
    in_game = (rng.random((envs, agents)) >= out).astype(np.int32)
    return loc_x, loc_y, in_game


def check(loc_x, loc_y, in_game, k, backend, method, **grid):
    want = tag_reference.neighbors(loc_x, loc_y, in_game, k, full_observation=0)
    got = search(loc_x, loc_y, in_game, k, method, backend=backend, **grid)
    np.testing.assert_array_equal(got, want)
    return got


@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("agents, k, side", [(70, 5, 5), (45, 16, 3), (33, 1, 1), (90, 10, 9)])
def test_both_searches_find_the_references_slots_on_a_random_field(backend, method, agents, k,
                                                                    side):
    check(*field(2, agents, seed=agents + k), k, backend, method, grid_side=side,
          field_size=20.0)


@pytest.mark.parametrize("method", GRIDS)
@pytest.mark.parametrize("side", [1, 2, 4, 7])
def test_ties_go_to_the_lower_index_though_the_grid_meets_agents_out_of_order(backend, side,
                                                                             method):
    """Whole-number places on a 4 x 4 field: most distances are shared by several agents,
    and some agents stand on one point (distance 0)."""
    loc_x, loc_y, in_game = field(2, 60, seed=side, whole=True, size=4.0)
    got = check(loc_x, loc_y, in_game, 16, backend, method, grid_side=side, field_size=4.0)
    assert (got >= 0).all()  # every slot filled: the ties were all there to settle


@pytest.mark.parametrize("method", GRIDS)
def test_fewer_agents_in_the_game_than_slots_leave_the_rest_empty(backend, method):
    loc_x, loc_y, in_game = field(2, 40, seed=3)
    in_game[:] = 0
    in_game[:, [1, 7, 30]] = 1
    got = check(loc_x, loc_y, in_game, 5, backend, method, grid_side=4, field_size=20.0)
    assert (got[:, :, 3:] == -1).all() and (got[:, 1, 2] == -1).all()


@pytest.mark.parametrize("method", GRIDS)
def test_every_agent_on_one_point(backend, method):
    loc_x = np.full((1, 40), 7.5, np.float32)
    loc_x[0, 0] = 20.0  # one on the field's edge, in the last cell
    check(loc_x, loc_x.copy(), np.ones((1, 40), np.int32), 10, backend, method, grid_side=6,
          field_size=20.0)


@pytest.mark.parametrize("method", GRIDS)
def test_places_past_the_fields_edge_are_searched_from_the_edge_cells(backend, method):
    """Cells cover [0, field_size]; an agent past it is put in the edge cell, which is
    also where the search looks for it last: the answer is still the reference's."""
    loc_x, loc_y, in_game = field(2, 50, seed=9, size=30.0)
    check(loc_x - 5, loc_y, in_game, 8, backend, method, grid_side=6, field_size=20.0)


def test_the_default_grid_fits_the_number_of_agents():
    assert grid_side_for(1000) == 22 and grid_side_for(110) == 7 and grid_side_for(2) == 1
    assert grid_side_for(1_000_000) == 32  # the most cells shared memory holds


@pytest.mark.parametrize("change, message", [
    (lambda a: a.update(loc_x=a["loc_x"].astype(np.float64)), "must be float32"),
    (lambda a: a.update(loc_y=a["loc_y"][:, :5]), "one shape"),
    (lambda a: a.update(in_game=[1, 0]), "2-D NumPy array"),
    (lambda a: a["loc_x"].__setitem__((0, 0), np.nan), "finite"),
    (lambda a: a.update(num_nearest=30), "num_nearest must be a whole number from 1 to 16"),
    (lambda a: a.update(num_nearest=0), "num_nearest"),
    (lambda a: a.update(grid_side=33), "grid_side must be a whole number from 1 to 32"),
    (lambda a: a.update(field_size=-1.0), "field_size must be a positive number"),
    (lambda a: a.update(method="sorted"), "method must be one of tiles, grid"),
])
def test_bad_input_is_refused_before_a_kernel_runs(change, message):
    loc_x, loc_y, in_game = field(1, 20, seed=1)
    args = {"loc_x": loc_x, "loc_y": loc_y, "in_game": in_game, "num_nearest": 4,
            "method": "grid", "grid_side": 4, "field_size": 20.0}
    change(args)
    with pytest.raises(EnvError, match=message):
        search(**args, backend="numba")


def test_too_many_agents_for_the_grid_says_to_use_tiles():
    """Only the grid is refused: the tiled search takes any number (tests/gpu runs it past
    2,048; here it would take minutes on the simulator)."""
    finder = NearestSearch(*field(1, 2049, seed=2), 4, "numba")
    with pytest.raises(EnvError, match="at most 2,048 agents .* use method='tiles'"):
        finder.run("grid")


@pytest.mark.parametrize("agents, message", [(1, "at least one env of at least 2 agents"),
                                             (0, "at least one env")])
def test_too_small_a_game_is_refused(agents, message):
    empty = np.zeros((1, agents), np.float32)
    with pytest.raises(EnvError, match=message):
        search(empty, empty, np.ones((1, agents), np.int32), 1, backend="numba")


@pytest.mark.parametrize("method", METHODS)
def test_an_env_over_several_blocks_finds_the_same(backend, method):
    """Blocks of 32 threads: an env of 90 agents takes three, and each block builds the
    env's whole grid for its own agents."""
    loc_x, loc_y, in_game = field(2, 90, seed=4)
    want = tag_reference.neighbors(loc_x, loc_y, in_game, 6, full_observation=0)
    got = search(loc_x, loc_y, in_game, 6, method, backend=backend, grid_side=5,
                 field_size=20.0, max_threads=32)
    np.testing.assert_array_equal(got, want)


def test_the_numba_kernels_compile_for_a_gpu_in_float32_with_no_local_memory():
    """The simulator checks no types; NVVM does. Both kernels compile to PTX (no GPU
    needed) with no double-precision step, no fused multiply-add in the distances, and
    the slots in registers, not in local memory."""
    compile_in_fresh_process("""
    from wd_teach_envs._tag import nearest_numba

    f32, i32 = types.float32, types.int32
    arrays = (types.Array(f32, 2, "C"), types.Array(f32, 2, "C"), types.Array(i32, 2, "C"),
              types.Array(i32, 3, "C"))
    for kernel, scalars in ((nearest_numba.tag_nearest_tiles, (i32, i32)),
                            (nearest_numba.tag_nearest_grid, (i32, i32, i32, f32, i32))):
        ptx, _ = cuda.compile_ptx(kernel.py_func, arrays + scalars, cc=(8, 0))
        name = kernel.py_func.__name__
        assert ".f64" not in ptx, f"{name} computes in float64"
        assert "fma.rn.f32" not in ptx, f"{name} fuses a multiply-add"
        assert "ld.local" not in ptx and "st.local" not in ptx, f"{name} uses local memory"
    print("compiled")
""")


def test_the_bench_times_both_searches_and_finds_them_equal(tmp_path, capsys):
    """bench/nearest.py at toy size on the simulator: a row per method and size, each with a
    time and the verdict that the two methods found the same slots."""
    result = nearest.main([str(tmp_path / "n.json"), "--envs", "2",
                                           "--agents", "40,64", "--backends", "numba",
                                           "--calls", "1"])
    rows = result["rows"]
    assert [(r["method"], r["agents"]) for r in rows] == [
        ("tiles", 40), ("grid", 40), ("cells", 40), ("tiles", 64), ("grid", 64), ("cells", 64)]
    assert all(r["same_slots"] and r["ms_per_search"] > 0 for r in rows)
    assert [r["grid_side"] for r in rows] == [None, 4, 4, None, 6, 6]
    assert "ms/search" in capsys.readouterr().out


def test_the_bench_times_the_grid_at_each_block_size(tmp_path):
    """--threads: the grid search again at each block size (an env of 64 agents in blocks of
    32 has two, each building the whole grid), by index and by cell, the tiled search once, at
    the first; every row's slots equal the tiled search's. --in-game 0.3: about seven agents
    in ten out of the game, who still search, by cell too (the state a Tag step is in)."""
    result = nearest.main([str(tmp_path / "n.json"), "--envs", "2", "--agents", "64",
                           "--backends", "numba", "--calls", "1", "--threads", "64,32",
                           "--in-game", "0.3"])
    rows = result["rows"]
    assert [(r["method"], r["threads"]) for r in rows] == [
        ("tiles", 64), ("grid", 64), ("cells", 64), ("grid", 32), ("cells", 32)]
    assert all(r["same_slots"] and r["in_game"] == 0.3 for r in rows)


@pytest.mark.parametrize("method", GRIDS)
@pytest.mark.parametrize("agents, k, max_threads", [(250, 10, 256), (150, 16, 160),
                                                    (250, 10, 96)])
def test_the_grid_writes_its_slots_a_few_warps_at_a_time(backend, agents, k, max_threads,
                                                         method):
    """The grid search stages its slots in shared memory, TAG_GRID_MAX_AGENTS / k rows a round
    (6 warps' at 10 nearest, 4 at 16), and each warp writes its rows as one run: blocks of
    more warps than a round holds take several rounds, and a short last warp (250 agents:
    26 lanes) or a block past the env's last agent (96 threads: the third block has 58 agents)
    writes only the rows there are. The slots are the reference's, every one written."""
    got = check(*field(2, agents, seed=agents), k, backend, method,
                grid_side=grid_side_for(agents), field_size=20.0, max_threads=max_threads)
    assert (got >= -1).all()  # no slot left at the store's -2
