"""bench/row_writes.py's four writers on the simulator: each writes every float of every row,
whatever the block's shape (a partial warp, an env over several blocks), so the GPU's table
compares writes that do the same work."""

import json

import numpy as np
import pytest

from wd_teach.errors import BenchError


@pytest.fixture
def row_writes(bench_script):
    return bench_script("row_writes")


@pytest.mark.parametrize("agents, max_threads", [
    (40, 1024),  # one block of 40 threads: a warp of 8 lanes at its end
    (40, 32),    # two blocks an env, the second 8 agents of 32 threads
    (70, 64),    # two blocks of two warps, the last warp 6 agents
    (40, 16),    # blocks of half a warp: a warp's rows end at its block's end
])
@pytest.mark.parametrize("kernel", ["rows_own", "rows_staged", "rows_flat", "rows_warp"])
def test_each_writer_writes_every_float_of_every_row(row_writes, kernel, agents, max_threads):
    writers = row_writes.RowWriters(2, agents, 13, "numba", max_threads=max_threads)
    np.testing.assert_array_equal(writers.written(kernel), row_writes.expected(2, agents, 13))


def test_a_staged_chunk_wider_than_the_row_still_writes_it(row_writes):
    writers = row_writes.RowWriters(1, 33, 5, "numba")  # under one chunk of 8
    np.testing.assert_array_equal(writers.written("rows_staged"), row_writes.expected(1, 33, 5))


def test_the_table_says_each_writer_was_right(row_writes, tmp_path):
    out = tmp_path / "rows.json"
    row_writes.main([str(out), "--envs", "1", "--agents", "34", "--obs-size", "9",
                     "--backends", "numba", "--calls", "1"])
    rows = json.loads(out.read_text())["rows"]
    assert [(r["kernel"], r["right"]) for r in rows] == [
        ("rows_own", True), ("rows_staged", True), ("rows_flat", True), ("rows_warp", True)]


def test_a_size_that_is_not_a_whole_number_is_refused_before_any_launch(row_writes):
    with pytest.raises(BenchError, match="obs_size must be a whole number of at least 1"):
        row_writes.RowWriters(1, 10, 0, "numba")


@pytest.mark.parametrize("agents", [200, 1000])
def test_the_warp_writer_runs_in_blocks_of_128_at_the_games_width(row_writes, agents):
    """rows_warp at the observe's 77 floats: 128-thread blocks, the env's last block part
    full (200 = 128 + 72; 1,000 = 7 x 128 + 104)."""
    writers = row_writes.RowWriters(1, agents, 77, "numba")
    assert writers.warp_shape.block[0] == 128 and writers.warp_shape.grid[1] == -(-agents // 128)
    np.testing.assert_array_equal(writers.written("rows_warp"), row_writes.expected(1, agents, 77))


def test_a_row_wider_than_the_warp_stage_is_refused_before_any_launch(row_writes):
    with pytest.raises(BenchError, match="more than rows_warp's stage holds"):
        row_writes.RowWriters(1, 10, 78, "numba")
