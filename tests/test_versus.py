"""The end-to-end table against WarpDrive (wd_teach.scale.versus): a small hand-made versus
file read back, its table's ratios and failures, the bars its picture draws, the files it
refuses, the Colab fetch, and the saved file notebook 09 reads."""

import importlib.util
import io
import json
from pathlib import Path

import pytest
from matplotlib import pyplot as plt

from wd_teach.errors import BenchError
from wd_teach.scale import bench_pictures, versus
from wd_teach.scale.bench import FORMAT as BENCH_FORMAT

REPO = Path(__file__).resolve().parents[1]


def _ours(setting, backend, num_envs, rate, error=""):
    return {"setting": setting, "what": "train", "backend": backend, "num_envs": num_envs,
            "num_agents": 110, "env_steps_per_second": rate, "error": error,
            "peak_memory_bytes": None if rate is None else 2**30}


#: WarpDrive at 100 and 500 envs; ours in the order a bench might have run them (the
#: -shared setting first), one row out of memory, one size WarpDrive was not run at, and a
#: setting measured on PyCUDA only.
FOUND = {
    "format": versus.FORMAT,
    "device": {"name": "Test GPU 9000", "kind": "cuda"},
    "versions": {"torch": "2.0"},
    "warpdrive": [
        {"system": "warpdrive-2.7.1", "envs": 100, "env_steps_per_s_total": 20_000.0},
        {"system": "warpdrive-2.7.1", "envs": 500, "env_steps_per_s_total": 50_000.0},
    ],
    "rows": [
        _ours("a2c-bf16-shared", "pycuda", 100, 360_000.0),
        _ours("a2c-bf16", "pycuda", 100, 240_000.0),
        _ours("a2c-bf16", "numba", 100, 200_000.0),
        _ours("a2c-bf16", "pycuda", 500, 100_000.0),
        _ours("a2c-bf16", "pycuda", 10_000, 300_000.0),
        _ours("ppo-fp32", "pycuda", 100, 10_000.0),
        _ours("ppo-fp32", "pycuda", 10_000, None, "out of memory: CUDA out of memory.\n"
                                                  "Tried to allocate 20.00 GiB"),
    ],
}


def _table_cells(text):
    """The markdown table as {envs: {column: cell}}."""
    rows = [[c.strip() for c in line.strip("|").split("|")]
            for line in text.splitlines() if line.startswith("| ") and "---:" not in line]
    head = rows[0]
    return {row[0]: dict(zip(head[1:], row[1:], strict=True)) for row in rows[1:]}


@pytest.fixture
def saved(tmp_path):
    path = tmp_path / "versus.json"
    path.write_text(json.dumps(FOUND))
    return path


def test_the_table_gives_each_rate_over_warpdrives_at_the_same_size(saved):
    text = versus.versus_table(versus.load_versus(saved))
    assert text.startswith("GPU: Test GPU 9000.")
    cells = _table_cells(text)
    assert list(cells) == ["100", "500", "10,000"]
    assert list(cells["100"]) == ["WarpDrive 2.7.1", "a2c-bf16 numba", "a2c-bf16 pycuda",
                                  "a2c-bf16-shared pycuda", "ppo-fp32 pycuda"]
    assert cells["100"] == {"WarpDrive 2.7.1": "20,000", "a2c-bf16 numba": "200,000 (10.0x)",
                            "a2c-bf16 pycuda": "240,000 (12.0x)",
                            "a2c-bf16-shared pycuda": "360,000 (18.0x)",
                            "ppo-fp32 pycuda": "10,000 (0.5x)"}
    assert cells["500"]["a2c-bf16 pycuda"] == "100,000 (2.0x)"
    assert cells["500"]["ppo-fp32 pycuda"] == "-"  # not measured there
    # no WarpDrive at 10,000 envs: our rate without a ratio, the failure said in words
    assert cells["10,000"]["WarpDrive 2.7.1"] == "not run"
    assert cells["10,000"]["a2c-bf16 pycuda"] == "300,000"
    assert cells["10,000"]["ppo-fp32 pycuda"] == "out of memory"
    notes = [line for line in text.splitlines() if line.startswith("- ")]
    assert notes[0] == ("- ppo-fp32 pycuda at 10,000 envs: out of memory: CUDA out of memory. "
                        "Tried to allocate 20.00 GiB")
    assert notes[1].startswith("- not run: WarpDrive 2.7.1's trainer is run up to 500 envs")


def test_the_table_keeps_the_backends_asked_for_and_says_when_warpdrive_failed():
    found = json.loads(json.dumps(FOUND))
    found["warpdrive"][1] = {"envs": 500, "error": "Traceback ...\nRuntimeError: heap full"}
    text = versus.versus_table(found, backends=["numba"])
    cells = _table_cells(text)
    assert list(cells["100"]) == ["WarpDrive 2.7.1", "a2c-bf16 numba"]
    assert cells["500"] == {"WarpDrive 2.7.1": "failed", "a2c-bf16 numba": "-"}
    assert "- WarpDrive 2.7.1 at 500 envs: Traceback ... RuntimeError: heap full" in text
    assert "out of memory" not in text  # that row is PyCUDA's


def test_the_picture_draws_a_bar_per_rate_with_its_ratio(saved):
    ax = versus.plot_versus(versus.load_versus(saved))  # PyCUDA, where it ran
    # WarpDrive at 100 and 500; a2c-bf16 at 100, 500, 10,000; the shared one and ppo at 100
    assert len(ax.patches) == 2 + 3 + 1 + 1
    heights = sorted(p.get_height() for p in ax.patches)
    assert heights == [10_000, 20_000, 50_000, 100_000, 240_000, 300_000, 360_000]
    texts = [t.get_text() for t in ax.texts]
    assert sorted(t for t in texts if t.endswith("x")) == ["0.5x", "12.0x", "18.0x", "2.0x"]
    assert sorted(t for t in texts if not t.endswith("x")) == ["not run", "out of memory"]
    assert [t.get_text() for t in ax.get_legend().get_texts()] == [
        "WarpDrive 2.7.1", "a2c-bf16", "a2c-bf16-shared", "ppo-fp32"]
    assert [t.get_text() for t in ax.get_xticklabels()] == ["100 envs", "500 envs",
                                                            "10,000 envs"]
    assert "Test GPU 9000" in ax.get_title() and "pycuda" in ax.get_title()
    assert ax.get_yscale() == "log"
    shared = [p for p in ax.patches if p.get_height() == 360_000]
    assert shared[0].get_hatch() and not [p for p in ax.patches if p.get_height() == 240_000
                                          and p.get_hatch()]
    plt.close("all")


def test_the_picture_draws_one_backend_at_a_time(saved):
    ax = versus.plot_versus(versus.load_versus(saved), backend="numba")
    assert sorted(p.get_height() for p in ax.patches) == [20_000, 50_000, 200_000]
    assert [t.get_text() for t in ax.texts if t.get_text().endswith("x")] == ["10.0x"]
    with pytest.raises(BenchError, match=r"no rows on backend 'numpy'.*\['numba', 'pycuda'\]"):
        versus.plot_versus(FOUND, backend="numpy")
    plt.close("all")


@pytest.mark.parametrize(("content", "says"), [
    (None, "no versus-WarpDrive results at"),
    ("{not json", "is not JSON"),
    (json.dumps({"format": BENCH_FORMAT, "rows": []}), "read those with reference_results"),
    (json.dumps([1, 2]), "is not versus-WarpDrive results"),
    (json.dumps({"format": versus.FORMAT, "device": {}, "rows": []}), "lacks warpdrive"),
])
def test_a_wrong_file_is_refused_with_what_to_do(tmp_path, content, says):
    path = tmp_path / "found.json"
    if content is not None:
        path.write_text(content)
    with pytest.raises(BenchError, match=says) as err:
        versus.load_versus(path)
    assert "bench/versus_warpdrive.py" in str(err.value)


def test_on_colab_the_saved_file_comes_from_the_repository(monkeypatch, tmp_path):
    asked = []

    def fetch(url, timeout):
        asked.append(url)
        return io.BytesIO(json.dumps(FOUND if "versus" in url else {"format": "?"}).encode())

    monkeypatch.setattr(bench_pictures, "on_colab", lambda: True)
    monkeypatch.setattr(bench_pictures, "_raw_url", lambda: "https://raw.example/o/n/main")
    monkeypatch.setattr(bench_pictures.urllib.request, "urlopen", fetch)
    monkeypatch.chdir(tmp_path)  # no data/ here: as a notebook opened alone
    assert versus.versus_results() == FOUND
    assert asked == ["https://raw.example/o/n/main/notebooks/data/versus_warpdrive_h100.json"]
    with pytest.raises(BenchError, match="is not versus-WarpDrive results"):
        versus.versus_results(Path("data") / "other.json")


def test_notebook_09s_saved_file_is_the_benchs_and_tabulates():
    saved = versus.versus_results(REPO / "notebooks" / versus.VERSUS)
    assert saved == json.loads((REPO / "bench/results/versus_warpdrive_h100.json").read_text()), (
        "copy bench/results/versus_warpdrive_h100.json to notebooks/data/")
    assert saved["warpdrive"] and saved["rows"]
    table = _table_cells(versus.versus_table(saved))
    assert set(table) == {f"{n:,}" for n in versus.sizes_of(saved)}
    plt.close(versus.plot_versus(saved).figure)


def test_the_bench_script_prints_the_packages_table():
    spec = importlib.util.spec_from_file_location("versus_bench",
                                                  REPO / "bench" / "versus_warpdrive.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    assert module.versus_table is versus.versus_table
    assert set(module.SETTINGS) >= {"a2c-bf16", "ppo-fp32", "a2c-bf16-shared"}
    with pytest.raises(SystemExit):
        module.main(["out.json", "--settings", "a2c-bf16,a2c-fp64"])


def test_the_bench_settings_build_the_model_shapes_they_name(bench_script):
    """a2c-bf16 is Tag's config as it ships (one ReLU body a policy, WarpDrive's shape, the
    same as -shared); -two is two tanh networks a policy, the default up to aac5aa7."""
    from wd_teach.train.config import load_config

    module = bench_script("versus_warpdrive")

    def shapes(setting):
        config = load_config("tag_continuous", sets=[*module.GAME, *module.SETTINGS[setting]])
        return {(p.shared, p.activation) for p in config.policies.values()}

    assert shapes("a2c-bf16") == shapes("a2c-bf16-shared") == {(True, "relu")}
    assert shapes("a2c-bf16-two") == shapes("plain-ppo-bf16-two") == {(False, "tanh")}
    assert "trainer.compile=true" in module.SETTINGS["a2c-bf16-two-compiled"]
