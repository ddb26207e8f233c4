"""The saved two-GPU scaling results: notebook 09's copy is the bench's file, it tabulates
with the speed-ups the bench worked out, and a file that is not one is refused."""

import json
import shutil
from pathlib import Path

import pytest

from wd_teach.errors import BenchError
from wd_teach.scale.scaling_results import FORMAT, load_scaling, scaling_table

ROOT = Path(__file__).resolve().parents[1]
SAVED = ROOT / "notebooks" / "data" / "scaling_gpus_h200.json"


def test_notebook_09s_copy_is_the_benchs_file_and_tabulates():
    saved = load_scaling(SAVED)
    assert saved == json.loads((ROOT / "bench" / "results" /
                                "scaling_gpus_h200_500.json").read_text())
    table = scaling_table(saved)
    assert saved["device"] in table.splitlines()[0]
    two = [r for r in saved["rows"] if r["gpus"] == 2]
    assert two and all(f"{r['speedup']:.2f}x" in table for r in two)
    assert all(r["weights_identical"] for r in saved["rows"])


def test_a_failed_row_and_rows_not_run_are_said(tmp_path):
    result = {"format": FORMAT, "env": "tag_continuous", "device": "GPU", "gpus_here": 1,
              "iterations": 2, "warmup": 1, "not_run": "the 2-GPU rows were NOT run",
              "rows": [{"trainer": "plain", "gpus": 1, "envs_per_gpu": 500,
                        "error": "out of memory\nmore"}]}
    table = scaling_table(result)
    assert "FAILED: out of memory" in table and "NOT run" in table


def test_a_file_that_is_not_scaling_results_is_refused(tmp_path):
    with pytest.raises(BenchError, match="no two-GPU results"):
        load_scaling(tmp_path / "missing.json")
    other = tmp_path / "other.json"
    shutil.copy(ROOT / "notebooks" / "data" / "versus_warpdrive_h100.json", other)
    with pytest.raises(BenchError, match="not the output of bench/scaling_gpus.py"):
        load_scaling(other)
