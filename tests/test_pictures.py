"""The notebooks' pictures draw the real launch shape and the real store, at any size."""

import time

import numpy as np
import pytest
from matplotlib.colors import to_hex
from matplotlib.figure import Figure

import wd_teach
from wd_teach.device import nvcc_path
from wd_teach.lessons import pictures, show


def squares(fig: Figure, colour: str) -> int:
    """How many thread squares of `colour` a grid picture has."""
    ax = fig.axes[0]
    return sum(1 for p in ax.patches if p.get_fill() and to_hex(p.get_facecolor()) == colour)


@pytest.mark.parametrize("num_envs, num_agents, max_threads", [(3, 4, 1024), (3, 4, 3),
                                                               (2, 5, 2)])
def test_grid_picture_has_a_square_per_thread(num_envs, num_agents, max_threads):
    geometry = wd_teach.launch_geometry(num_envs, num_agents, max_threads)
    fig = pictures.draw_grid(num_envs, num_agents, max_threads)
    threads = num_envs * geometry.blocks_per_env * geometry.threads
    assert squares(fig, pictures.AGENT_COLOUR) == num_envs * num_agents
    assert squares(fig, pictures.IDLE_COLOUR) == threads - num_envs * num_agents
    assert str(geometry.grid) in fig.axes[0].get_title()


def test_grid_picture_of_a_full_size_run_is_drawn_in_part_and_quickly():
    start = time.perf_counter()
    fig = pictures.draw_grid(2_000, 256, max_threads=96)
    assert time.perf_counter() - start < 5
    assert squares(fig, pictures.AGENT_COLOUR) < 200
    assert "(2000, 3)" in fig.axes[0].get_title()


def test_store_picture_has_a_bar_per_array_and_one_per_pristine_copy():
    store = wd_teach.DataStore(3, 4)
    store.push("pos", np.zeros((3, 4), np.float32), per="agent", reset=True)
    store.push("wind", np.zeros(3, np.float32), per="env")
    bars = [p for p in pictures.draw_store(store).axes[0].patches if p.get_width() > 0]
    assert len(bars) == 3


def test_store_picture_of_an_empty_store_says_what_to_do():
    with pytest.raises(ValueError, match="push some"):
        pictures.draw_store(wd_teach.DataStore(3, 4))


def test_data_flow_picture_draws():
    assert isinstance(pictures.draw_data_flow(), Figure)


def test_pycuda_missing_shows_the_source_and_says_why(capsys):
    if show.pycuda_here():
        pytest.skip("PyCUDA runs here, so nothing is missing")
    source = 'extern "C" __global__ void noop(float* x) { }'
    show.pycuda_missing(source, ptx_lines=20)
    out = capsys.readouterr().out
    assert "does not run" in out and source in out
    if nvcc_path() is not None:
        assert ".entry noop" in out
