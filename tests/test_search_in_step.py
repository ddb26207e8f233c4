"""bench/search_in_step.py at tiny size on the NumPy reference: a row for each game, search
and backend asked for, and the grid's cell counts taken from the game's own positions."""

import json
import runpy
import sys
from pathlib import Path

import numpy as np
import torch

BENCH = Path(__file__).resolve().parents[1] / "bench" / "search_in_step.py"


def test_each_run_steps_its_game_and_counts_its_cells(tmp_path, monkeypatch):
    out = tmp_path / "steps.json"
    monkeypatch.setattr(sys, "argv", [str(BENCH), str(out), "--envs", "2", "--agents", "100",
                                      "--steps", "2", "--backend", "numpy",
                                      "--runs", "tag_continuous/grid,tag_grid/tiles"])
    runpy.run_path(str(BENCH), run_name="__main__")
    rows = json.loads(out.read_text())["rows"]
    assert [(r["game"], r["search"], r["backend"]) for r in rows] == [
        ("tag_continuous", "grid", "numpy"), ("tag_grid", "tiles", "numpy")]
    for row in rows:
        assert row["agents"] == 100 and row["num_envs"] == 2 and row["wall_ms"] > 0
        cells = row["cells"]
        assert 0 < cells["in_game_share"] <= 1
        assert cells["grid_side"] == 7  # about two agents a cell: sqrt(100 / 2)
        # one env counted (every 50th of 2): its fullest cell holds at least the mean
        assert cells["fullest_cell_max"] >= 100 * cells["in_game_share"] / 2 / 49


def test_cell_counts_read_the_positions_and_skip_the_agents_out_of_the_game():
    spec = runpy.run_path(str(BENCH))
    store = {"loc_x": torch.tensor([[0.5, 0.6, 0.7, 9.9]]),
             "loc_y": torch.tensor([[0.5, 0.6, 0.7, 9.9]]),
             "in_game": torch.tensor([[1, 1, 0, 1]], dtype=torch.int32)}
    cells = spec["cell_counts"](store, side=2, field_size=10.0)
    assert cells["in_game_share"] == 0.75
    assert cells["fullest_cell_max"] == 2 and cells["fullest_cell_median"] == 2.0
    assert np.isclose(cells["grid_side"], 2)
