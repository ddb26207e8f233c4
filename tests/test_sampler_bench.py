"""The sampler benchmark: the function the notebook and bench/sampler.py share, at tiny size."""

import importlib.util
import json
from pathlib import Path

import pytest

from wd_teach import SamplerError, bench_sampler
from wd_teach.sampler.bench import CATEGORICAL, MULTINOMIAL, format_table, speedups

BENCH_SCRIPT = Path(__file__).resolve().parents[1] / "bench" / "sampler.py"


def test_bench_times_every_backend_and_torch():
    timings = bench_sampler(2, 3, 4, backends=["numba"], repeats=2, warmup=0)
    names = [t.name for t in timings]
    assert names == ["wd_teach numba: sample()", "wd_teach numba: sample(probs), with the copy",
                     MULTINOMIAL, CATEGORICAL]
    assert all(t.draws == 6 and t.median_ms > 0 for t in timings)
    assert speedups(timings)[MULTINOMIAL] == 1.0
    table = format_table(timings)
    assert "6 draws per call" in table and f"x {MULTINOMIAL}" in table
    if timings[0].device == "CPU":
        assert "CUDA simulator" in table


def test_bench_refuses_a_backend_that_cannot_run_here():
    with pytest.raises(SamplerError, match="cannot run here"):
        bench_sampler(2, 3, 4, backends=["cuda-by-magic"])


def test_bench_script_writes_json(tmp_path, capsys):
    spec = importlib.util.spec_from_file_location("bench_sampler_script", BENCH_SCRIPT)
    script = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(script)
    out = tmp_path / "results" / "sampler.json"
    script.main([str(out), "--envs", "2", "--agents", "3", "--actions", "4", "--repeats", "1",
                 "--backends", "numba"])
    results = json.loads(out.read_text())
    assert results["sizes"] == {"envs": 2, "agents": 3, "actions": 4}
    assert [row["name"] for row in results["rows"]][-2:] == [MULTINOMIAL, CATEGORICAL]
    assert "speedup_vs_multinomial" in results["rows"][0]
    assert "draws per call" in capsys.readouterr().out
