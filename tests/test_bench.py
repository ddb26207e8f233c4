"""The throughput bench at tiny size: the simulator and NumPy backends, the JSON it writes,
the table it prints, the ratios to the CPU baseline, and bad input refused before any work."""

import importlib.util
import json
import runpy
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

import wd_teach
from wd_teach.cli import main as cli
from wd_teach.errors import BenchError, ConfigError, MissingPieceError
from wd_teach.scale import bench
from wd_teach.scale.bench import (
    FORMAT,
    MULTINOMIAL,
    bounded_cpu_threads,
    cpu_threads,
    format_table,
    load_results,
    merge_results,
    run_bench,
    write_results,
)
from wd_teach_envs.tag_continuous import TagContinuous

BENCH = Path(__file__).resolve().parents[1] / "bench"
ROW_KEYS = {"what", "backend", "device", "num_envs", "num_agents", "calls", "seconds",
            "env_steps", "baseline", "breakdown", "peak_memory_bytes", "note", "error",
            "env_steps_per_second", "agent_steps_per_second", "ms_per_call"}
#: Training rows on the simulator take seconds per step: two steps per rollout.
SHORT = ["trainer.steps=2"]
needs_cpu = pytest.mark.skipif(wd_teach.gpu_available(), reason="checks the CPU defaults")


def script(name):
    spec = importlib.util.spec_from_file_location(f"bench_{name}", BENCH / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def env_results():
    """The env step on the simulator and on NumPy, at two sizes of one game."""
    return run_bench("env", envs=[1, 2], agents=[3], backends=["numba", "numpy"], iterations=1)


@pytest.fixture(scope="module")
def train_results():
    """Training on the simulator, and the CPU baseline (NumPy env, torch on the CPU) beside
    it, as a GPU run would have them."""
    return run_bench("train", envs=[1], agents=[3], backends=["numba"], iterations=1,
                     cpu_baseline=True, cpu_iterations=1, sets=SHORT)


def test_env_rows_cover_every_backend_and_size(env_results):
    rows = env_results["rows"]
    assert [(r["backend"], r["num_envs"]) for r in rows] == [
        ("numba", 1), ("numba", 2), ("numpy", 1), ("numpy", 2)]
    for row in rows:
        assert set(row) == ROW_KEYS
        assert row["num_agents"] == 3 and row["calls"] == 1
        assert row["env_steps"] == row["num_envs"]  # one step of every env
        assert row["env_steps_per_second"] == pytest.approx(row["env_steps"] / row["seconds"])
        assert row["agent_steps_per_second"] == pytest.approx(3 * row["env_steps_per_second"])
    assert rows[2]["device"] == "cpu"  # NumPy runs on the CPU, GPU or not
    if not wd_teach.gpu_available():
        assert rows[0]["device"] == "cpu"
        assert rows[0]["note"] == bench.SIMULATED and rows[2]["note"] == ""


def test_ratios_divide_by_the_numpy_row_of_the_same_size(env_results):
    ratios = env_results["ratios"]
    assert [(r["backend"], r["num_envs"]) for r in ratios] == [("numba", 1), ("numba", 2)]
    rows = {(r["backend"], r["num_envs"]): r for r in env_results["rows"]}
    for ratio in ratios:
        want = (rows["numba", ratio["num_envs"]]["env_steps_per_second"]
                / rows["numpy", ratio["num_envs"]]["env_steps_per_second"])
        assert ratio["ratio"] == pytest.approx(want)


def test_train_rows_have_a_breakdown_and_a_cpu_baseline(train_results):
    rows = train_results["rows"]
    assert [(r["backend"], r["baseline"]) for r in rows] == [("numba", False), ("numpy", True)]
    for row in rows:
        assert row["env_steps"] == 2 * row["num_envs"]  # steps x envs, one iteration
        assert set(row["breakdown"]) == {"policy", "sampling", "env step", "training", "other",
                                         "total"}
        assert all(seconds >= 0 for seconds in row["breakdown"].values())
    assert [r["backend"] for r in train_results["ratios"]] == ["numba"]
    baseline = train_results["config"]["cpu_baseline"]
    assert baseline == {"envs": [1], "calls": {"train": 1}, "threads": cpu_threads()}
    assert train_results["config"]["train_config"]["trainer"]["steps"] == 2


def test_sampler_and_rollout_rows():
    found = run_bench(["sampler", "rollout"], envs=[2], agents=[3], backends=["numba"],
                      iterations=1, sets=SHORT)
    assert [(r["what"], r["backend"]) for r in found["rows"]] == [
        ("sampler", "numba"), ("sampler", MULTINOMIAL), ("rollout", "numba")]
    sampler, _, rollout = found["rows"]
    assert sampler["env_steps"] == 2  # one draw for every agent of both envs
    assert rollout["env_steps"] == 2 * 2 and rollout["breakdown"] is None


@pytest.mark.parametrize("fast", [True, False])
def test_results_say_which_floor_ran(fast):
    from wd_teach.floors import set_fast

    try:
        set_fast(fast)
        found = run_bench("env", envs=[1], agents=[3], backends=["numpy"], iterations=1)
    finally:
        set_fast("reset")
    assert found["floor"] == ("fast" if fast else "plain")


def test_results_are_plain_json_with_the_device_and_versions(env_results, tmp_path):
    path = write_results(env_results, tmp_path / "out" / "bench.json")
    text = path.read_text()
    back = json.loads(text, parse_constant=lambda c: pytest.fail(f"{c} is not JSON"))
    assert back == load_results(path)
    assert back["format"] == FORMAT
    assert set(back) == {"format", "created", "device", "versions", "config", "floor", "rows",
                         "ratios"}
    assert {"name", "kind", "driver", "driver_cuda", "memory_gib", "gpus"} <= set(back["device"])
    assert {"python", "torch", "torch_cuda", "numpy", "numba", "numba_cuda", "pycuda",
            "wd_teach"} == set(
        back["versions"])
    if not wd_teach.gpu_available():
        assert back["device"]["name"] == "cpu" and back["device"]["kind"] == "cpu"
    assert back["config"]["measurements"]["env"] == {"envs": [1, 2], "agents": [3],
                                                     "backends": ["numba", "numpy"], "calls": 1}


def test_table_has_every_row_the_ratio_and_the_breakdown(env_results, train_results):
    table = format_table(env_results)
    assert "env steps/s" in table and "agent steps/s" in table and "x CPU" in table
    assert len([line for line in table.splitlines() if line.startswith("env ")]) == 4
    assert "Where an iteration's time goes" not in table
    table = format_table(train_results)
    assert "cpu (baseline)" in table
    assert "Where an iteration's time goes" in table and "env step" in table
    if not wd_teach.gpu_available():
        assert f"note: {bench.SIMULATED}" in table and "no GPU" in table


@pytest.mark.parametrize("kwargs, error, words", [
    ({"what": "evn"}, BenchError, "unknown measurement 'evn'"),
    ({"what": []}, BenchError, "unknown measurement"),
    ({"envs": [0]}, BenchError, "envs must be whole numbers of at least 1"),
    ({"envs": [10, -1]}, BenchError, "at least 1"),
    ({"envs": [2.5]}, BenchError, "whole numbers"),
    ({"envs": []}, BenchError, "envs is empty"),
    ({"agents": [1]}, BenchError, "a tagger and a runner"),
    ({"backends": ["cuda"]}, BenchError, "unknown backend 'cuda'"),
    ({"iterations": 0}, BenchError, "iterations must be a whole number of at least 1"),
    ({"cpu_envs": [0], "cpu_baseline": True}, BenchError, "cpu_envs"),
    ({"env": "cartpole", "agents": [3]}, BenchError, "does not change its number of agents"),
    ({"env": "cartpol"}, ConfigError, "give its name .*cartpole.* or its folder's path"),
    ({"sets": ["trainer.stepz=3"]}, ConfigError, "stepz"),
])
def test_bad_input_is_refused_before_anything_runs(monkeypatch, kwargs, error, words):
    monkeypatch.setattr(bench, "run_job", lambda *a: pytest.fail("a job ran"))
    kwargs = {"what": "env", **kwargs}
    with pytest.raises(error, match=words):
        run_bench(kwargs.pop("what"), **kwargs)


@needs_cpu
def test_pycuda_without_a_gpu_says_why():
    with pytest.raises(MissingPieceError, match="NVIDIA GPU"):
        run_bench("env", backends=["pycuda"])


@needs_cpu
def test_cpu_defaults_are_small_and_run_training_on_numpy():
    plan = bench.make_plan("all")
    sizes = wd_teach.lesson_sizes()
    assert {j.num_envs for j in plan.jobs if j.what == "env"} == set(sizes.bench_envs)
    assert {j.backend for j in plan.jobs if j.what == "train"} == {"numpy"}
    assert {j.backend for j in plan.jobs if j.what == "sampler"} == {"numba", MULTINOMIAL}
    assert max(j.num_envs * j.num_agents for j in plan.jobs) <= 50


def test_a_size_that_runs_out_of_memory_gives_a_row_that_says_so(monkeypatch):
    def too_big(config, job):
        if job.num_envs > 1:
            raise torch.cuda.OutOfMemoryError("CUDA out of memory. Tried to allocate 80 GiB")
        return real(config, job)

    real = bench.bench_env
    monkeypatch.setattr(bench, "bench_env", too_big)
    found = run_bench("env", envs=[1, 2], agents=[3], backends=["numpy"], iterations=1)
    ok, failed = found["rows"]
    assert ok["seconds"] > 0 and ok["error"] == ""
    assert failed["seconds"] is None and failed["env_steps_per_second"] is None
    assert failed["error"].startswith("out of memory")
    assert "note: out of memory" in format_table(found)


def test_other_errors_are_not_swallowed(monkeypatch):
    monkeypatch.setattr(bench, "bench_env", lambda *a: 1 / 0)
    with pytest.raises(ZeroDivisionError):
        run_bench("env", envs=[1], agents=[3], backends=["numpy"], iterations=1)


@pytest.mark.parametrize("agents, want", [
    (110, {"num_taggers": 10, "num_runners": 100, "num_nearest": 10}),
    (1000, {"num_taggers": 91, "num_runners": 909, "num_nearest": 10}),
    (10, {"num_taggers": 1, "num_runners": 9, "num_nearest": 9}),
    (2, {"num_taggers": 1, "num_runners": 1, "num_nearest": 1}),
])
def test_a_game_has_one_tagger_for_about_ten_runners(agents, want):
    assert TagContinuous(num_taggers=2, num_runners=10).params_for_agents(agents) == want


def test_a_game_of_the_configs_own_size_keeps_its_split():
    assert TagContinuous(num_taggers=2, num_runners=5, num_nearest=3).params_for_agents(7) == {}


def test_an_env_of_fixed_agents_is_measured_at_its_own_number():
    found = run_bench("env", envs=[2], backends=["numpy"], iterations=1, env="cartpole")
    assert [r["num_agents"] for r in found["rows"]] == [1]
    with pytest.raises(BenchError, match="does not change its number of agents"):
        run_bench("env", envs=[2], agents=[3], backends=["numpy"], iterations=1,
                  env="cartpole")


def test_cli_prints_the_table_and_writes_json(tmp_path, capsys):
    out = tmp_path / "bench.json"
    assert cli(["bench", "env", "--envs", "1,2", "--agents", "3", "--backend", "numpy",
                "--iterations", "1", "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "env steps/s" in printed and f"wrote {out}" in printed
    assert [r["num_envs"] for r in load_results(out)["rows"]] == [1, 2]


@pytest.mark.parametrize("argv, words", [
    (["bench", "sprint"], "unknown measurement 'sprint'"),
    (["bench", "env", "--envs", "1,x"], "--envs takes whole numbers separated by commas"),
    (["bench", "env", "--agents", "0"], "agents must be whole numbers of at least 1"),
    (["bench", "env", "--agents", "1"], "a Tag game needs a tagger and a runner"),
    (["bench", "env", "--backend", "opencl"], "unknown backend 'opencl'"),
])
def test_cli_bad_input_says_what_is_wrong(argv, words, capsys):
    assert cli(argv) == 2
    assert words in capsys.readouterr().err


def test_scripts_run_the_bench_and_merge_runs(tmp_path, monkeypatch):
    first, second, merged = tmp_path / "a.json", tmp_path / "b.json", tmp_path / "all.json"
    for path, backend in [(first, "numba"), (second, "numpy")]:
        monkeypatch.setattr(sys, "argv", ["throughput.py", "env", "--envs", "1", "--agents",
                                          "3", "--backend", backend, "--iterations", "1",
                                          "--out", str(path), "--quiet"])
        with pytest.raises(SystemExit) as done:
            runpy.run_path(str(BENCH / "throughput.py"), run_name="__main__")
        assert done.value.code == 0
    script("merge_results").main([str(merged), str(first), str(second)])
    result = load_results(merged)
    assert [r["backend"] for r in result["rows"]] == ["numba", "numpy"]
    assert [r["backend"] for r in result["ratios"]] == ["numba"]  # across the two runs
    assert len(result["config"]["runs"]) == 2


def test_results_of_different_devices_do_not_merge(env_results):
    other = json.loads(json.dumps(env_results))
    other["device"]["name"] = env_results["device"]["name"] + " (another machine)"
    with pytest.raises(BenchError, match="different devices"):
        merge_results([env_results, other])
    with pytest.raises(BenchError, match="nothing to merge"):
        merge_results([])


def test_load_refuses_what_is_not_bench_results(tmp_path):
    with pytest.raises(BenchError, match="no benchmark results"):
        load_results(tmp_path / "missing.json")
    (tmp_path / "x.json").write_text('{"history": []}')
    with pytest.raises(BenchError, match="not wd-teach benchmark results"):
        load_results(tmp_path / "x.json")


def test_pictures_draw_the_results(env_results, train_results):
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib import pyplot as plt

    from wd_teach.scale import bench_pictures as pictures

    ax = pictures.plot_throughput(env_results, "env")
    assert len(ax.lines) == 2  # numba and numpy, at 3 agents, over 1 and 2 envs
    assert [t.get_text() for t in ax.get_xticklabels()] == ["1", "2"]
    ax = pictures.plot_throughput(env_results, "env", against="agents")
    assert len(ax.lines) == 0  # one number of agents: no line to draw
    assert len(pictures.plot_breakdown(train_results).patches) == 2 * 5  # rows x phases
    assert len(pictures.plot_ratios(train_results).patches) == 1
    with pytest.raises(BenchError, match="no profiled training rows"):
        pictures.plot_breakdown(env_results)
    with pytest.raises(BenchError, match="no ratios"):
        pictures.plot_ratios(train_results, what="env")
    assert pictures.describe(env_results).endswith(env_results["created"][:10])
    plt.close("all")


def test_the_notebooks_saved_results_are_bench_results():
    from wd_teach.scale.bench_pictures import REFERENCE, reference_results

    saved = reference_results(Path(__file__).resolve().parents[1] / "notebooks" / REFERENCE)
    assert saved["format"] == FORMAT
    assert {row["what"] for row in saved["rows"]} >= {"env", "train"}
    assert any(row["breakdown"] for row in saved["rows"]) and saved["ratios"]


def test_cpu_rows_use_a_bounded_number_of_threads(monkeypatch):
    monkeypatch.delenv("WD_TEACH_CPU_THREADS", raising=False)
    assert 1 <= cpu_threads() <= 8
    monkeypatch.setenv("WD_TEACH_CPU_THREADS", "1")
    before = torch.get_num_threads()
    with bounded_cpu_threads(True):
        assert torch.get_num_threads() == 1
    assert torch.get_num_threads() == before
    with bounded_cpu_threads(False):
        assert torch.get_num_threads() == before


@pytest.mark.parametrize("setting", ["0", "two", "-1"])
def test_a_wrong_thread_count_says_what_to_give(monkeypatch, setting):
    monkeypatch.setenv("WD_TEACH_CPU_THREADS", setting)
    with pytest.raises(BenchError, match="give a whole number of threads"):
        cpu_threads()


def test_the_headline_script_runs_every_stage_and_writes_its_rows(tmp_path):
    """bench/headline.sh at a toy size on the NumPy backend: every stage ends in time and
    writes its JSON rows at 1,000 agents (on a GPU it runs 2,000 envs of them)."""
    import os
    import subprocess

    repo = Path(__file__).resolve().parents[1]
    env = {**{k: v for k, v in os.environ.items() if k != "HEADLINE_STAGES"},  # all of them
           "HEADLINE_ENVS": "2", "HEADLINE_BACKEND": "numpy",
           "HEADLINE_BACKENDS": "numpy", "TRAIN_STEPS": "4",
           "NEAREST_BACKENDS": "numba", "NEAREST_AGENTS": "40",  # Numba's simulator
           "OBSERVE_AGENTS": "40", "NEAREST_THREADS": "64", "SEARCH_THREADS": "32"}
    done = subprocess.run(["bash", str(repo / "bench" / "headline.sh"), str(tmp_path), "none"],
                          cwd=repo, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout + done.stderr  # the number of failed stages
    for stage in ("env-agents", "env-both", "env-grid", "rollout", "train"):
        assert f"{stage}: exit 0" in done.stdout, done.stdout
        rows = json.loads((tmp_path / f"{stage}.json").read_text())["rows"]
        assert rows and rows[-1]["num_agents"] == 1000, stage
        assert all(row["env_steps_per_second"] > 0 for row in rows), stage
    assert "nearest: exit 0" in done.stdout, done.stdout
    rows = json.loads((tmp_path / "nearest.json").read_text())["rows"]
    assert [(r["method"], r["threads"]) for r in rows] == [
        ("tiles", 40), ("grid", 40), ("cells", 40)]  # 40 agents: at most 40 threads a block
    assert all(r["same_slots"] for r in rows)
    assert "observe-twin: exit 0" in done.stdout, done.stdout
    rows = json.loads((tmp_path / "observe-twin.json").read_text())["rows"]
    assert [(r["observe"], r.get("grid_threads")) for r in rows] == [
        ("plain", None), ("twin", None), ("twin", 32)]
    assert all(r["same"] for r in rows)



def test_the_headline_script_runs_only_the_stages_asked_and_refuses_an_unknown_one(tmp_path):
    """HEADLINE_STAGES splits the headline over device calls: the stages named run, the
    others say they were skipped; a name that is no stage stops it before anything runs."""
    import os
    import subprocess

    repo = Path(__file__).resolve().parents[1]
    env = {**os.environ, "HEADLINE_ENVS": "2", "HEADLINE_BACKEND": "numpy",
           "HEADLINE_BACKENDS": "numpy", "HEADLINE_STAGES": "env-both"}
    done = subprocess.run(["bash", str(repo / "bench" / "headline.sh"), str(tmp_path), "none"],
                          cwd=repo, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "env-both: exit 0" in done.stdout
    assert "=== rollout: not in HEADLINE_STAGES, skipped" in done.stdout
    assert "=== warpdrive: skipped (no WarpDrive anchor at none)" in done.stdout
    assert sorted(p.name for p in tmp_path.glob("*.json")) == ["env-both.json"]
    env["HEADLINE_STAGES"] = "env-both, rolout"  # spaces after commas are no part of a name
    done = subprocess.run(["bash", str(repo / "bench" / "headline.sh"), str(tmp_path), "none"],
                          cwd=repo, env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 2 and "no stage named 'rolout'" in done.stderr

def test_learned_against_chaser_scores_both_on_the_same_games_over_the_seeds(tmp_path,
                                                                             bench_script):
    """bench/learned_vs_chaser.py at toy size: each seed trains, then its learned taggers and
    the chaser are scored against the same trained runners and against random runners; an
    interval per score and for each difference, and the floor setting is put back."""
    from wd_teach import floors

    result = bench_script("learned_vs_chaser").main(
        [str(tmp_path / "lc.json"), "--seconds", "0.5", "--seeds", "2", "--eval-envs", "2",
         "--game", "fast-runners"])
    assert floors._chosen == "unset"
    assert result["seeds"] == [0, 1] and len(result["runs"]) == 2
    assert result["params"]["runner_max_speed"] == 0.6
    for run in result["runs"]:
        assert run["iterations"] >= 1 and run["seconds"] >= 0.5
        # the curve: the first iteration and the last at least, in order, with what it keeps
        curve = run["curve"]
        assert curve[0]["iteration"] == 1 and curve[-1]["iteration"] == run["iterations"]
        assert [p["iteration"] for p in curve] == sorted({p["iteration"] for p in curve})
        assert set(curve[-1]) == {"iteration", "seconds", *bench_script(
            "learned_vs_chaser").CURVE}
        assert all(run[name] >= 0 for name in ("learned/trained", "chaser/trained",
                                               "learned/random", "chaser/random"))
    # The chaser really played: half a second of training tags far fewer than it does.
    assert any(run["chaser/random"] != run["learned/random"] for run in result["runs"])
    rows = {row["score"]: row for row in result["rows"]}
    for runners in ("trained", "random"):
        difference = rows[f"learned - chaser, {runners} runners"]
        assert difference["low"] <= difference["iqm"] <= difference["high"]
        for run in result["runs"]:
            assert difference["per_seed"][run["seed"]] == pytest.approx(
                run[f"learned/{runners}"] - run[f"chaser/{runners}"])
        assert difference["verdict"]



def test_learned_against_chaser_splits_seeds_over_sittings_and_merges_them(
        tmp_path, bench_script, capsys):
    """--first-seed trains a later range of seeds; --merge scores two such results as one
    (each seed's scores as trained, intervals over all four), and refuses results of other
    settings or with a seed twice, naming what differs."""
    module = bench_script("learned_vs_chaser")
    toy = ["--seconds", "0.3", "--seeds", "2", "--eval-envs", "2",
           "--set", "env.params.episode_length=20"]
    first = module.main([str(tmp_path / "a.json"), *toy])
    second = module.main([str(tmp_path / "b.json"), *toy, "--first-seed", "2"])
    assert first["seeds"] == [0, 1] and second["seeds"] == [2, 3]
    both = module.main([str(tmp_path / "ab.json"), "--merge", str(tmp_path / "b.json"),
                        str(tmp_path / "a.json")])
    assert both["seeds"] == [0, 1, 2, 3] and both["sets"] == first["sets"]
    assert both["merged_from"] == [str(tmp_path / "b.json"), str(tmp_path / "a.json")]
    trained = {run["seed"]: run for run in first["runs"] + second["runs"]}
    rows = {row["score"]: row for row in both["rows"]}
    for seed, difference in rows["learned - chaser, random runners"]["per_seed"].items():
        run = trained[seed]
        assert difference == pytest.approx(run["learned/random"] - run["chaser/random"])
    assert json.loads((tmp_path / "ab.json").read_text())["seeds"] == [0, 1, 2, 3]

    with pytest.raises(SystemExit):  # seed 0 and 1 twice
        module.main([str(tmp_path / "aa.json"), "--merge", str(tmp_path / "a.json"),
                     str(tmp_path / "a.json")])
    assert "seed(s) [0, 1] appear in more than one result" in capsys.readouterr().err
    other = json.loads((tmp_path / "b.json").read_text())
    other["seconds"] = 60.0
    (tmp_path / "c.json").write_text(json.dumps(other))
    with pytest.raises(SystemExit):
        module.main([str(tmp_path / "ac.json"), "--merge", str(tmp_path / "a.json"),
                     str(tmp_path / "c.json")])
    assert "other settings than" in capsys.readouterr().err.replace("\n", " ")
    assert not (tmp_path / "ac.json").exists()
    with pytest.raises(SystemExit):  # a worker's part is not a result
        (tmp_path / "part.json").write_text(json.dumps({"runs": first["runs"]}))
        module.main([str(tmp_path / "ap.json"), "--merge", str(tmp_path / "part.json")])
    assert "not a learned_vs_chaser result" in capsys.readouterr().err


def test_the_pairs_game_takes_two_taggers_to_catch(bench_script):
    """learned_vs_chaser's `pairs` game: a trainer of it plays Tag with taggers_needed=2."""
    from wd_teach.train.trainer import Trainer

    module = bench_script("learned_vs_chaser")
    trainer = Trainer("tag_continuous", gpu=False,
                      sets=[*module.GAMES["pairs"], "env.num_envs=2"])
    assert trainer.env.config.taggers_needed == 2
    assert trainer.env.constants()["taggers_needed"] == 2

def test_greedy_runners_scores_each_critic_greedy_and_drawn(tmp_path, bench_script):
    """bench/greedy_runners.py at the CPU's toy sizes: both critics of one seed trained, each
    scored greedy and drawn, the runners' greedy moves measured, and the floor put back."""
    from wd_teach import floors

    result = bench_script("greedy_runners").main(["--seeds", "1",
                                                  "--out", str(tmp_path / "g.json")])
    assert floors._chosen == "unset"
    rows = json.loads((tmp_path / "g.json").read_text())["rows"]
    assert [(r["seed"], r["critic"]) for r in rows] == [(0, "independent"), (0, "centralized")]
    for row in rows:
        assert row["caught greedy"] >= 0 and row["caught drawn"] >= 0
        assert row["greedy move a step"] >= 0 and row["actor moved"] > 0  # training moved it
        assert isinstance(row["greedy games the same"], bool)
    assert result["rows"] == rows


def test_greedy_runners_trains_what_lesson_11_trains(bench_script):
    """bench/greedy_runners.py's run is lesson 11's `tag_run`: the lesson's own cells (its
    game, its policies, tag_run), run here with a Trainer that only records, give the same
    overrides at both sizes, for both critics."""
    from wd_teach.lessons.sizes import CPU_SIZES, GPU_SIZES

    bench = bench_script("greedy_runners")
    notebook = json.loads((Path(__file__).resolve().parents[1] / "notebooks"
                           / "11_multi_agent.ipynb").read_text())
    code = ["".join(c["source"]) for c in notebook["cells"] if c["cell_type"] == "code"]
    game = next(c for c in code if "GAME = {" in c)
    runs = next(c for c in code if "def tag_run(" in c)
    runs = runs[:runs.index("\nprint(")]  # its definitions, not its demonstration

    def recorded(env, gpu=None, overrides=None):
        return {"env": env, "overrides": overrides}

    for sizes in (GPU_SIZES, CPU_SIZES):
        found = {"sizes": sizes, "gpu": False}
        exec(game, found)
        exec(runs, found)
        found["Trainer"] = recorded  # after the cell's own import
        for critic in ("independent", "centralized"):
            made = found["tag_run"](3, critic=critic)
            assert made["env"] == "tag_continuous"
            assert made["overrides"] == bench.lesson_overrides(3, critic, sizes)


@pytest.mark.parametrize("playing, per_cell", [(200, 2.0), (60, 1.0), (1000, 4.0)])
def test_the_grid_model_stops_only_when_its_rings_hold_the_true_nearest(bench_script, playing,
                                                                         per_cell):
    """bench/grid_model.py counts what the grid search compares under the kernel's stopping
    rule; the rule is right only if the square of rings it stopped at holds each agent's
    true 10 nearest in the game, which a search over every pair says."""
    module = bench_script("grid_model")
    rng = np.random.default_rng(1)
    agents, nearest = 1000, 10
    x, y = rng.random(agents), rng.random(agents)
    in_game = np.zeros(agents, bool)
    in_game[rng.choice(agents, playing, replace=False)] = True
    side = min(max(int(np.sqrt(playing / per_cell) + 0.5), 1), 32)
    cells_x, cells_y = (np.minimum((v * side).astype(int), side - 1) for v in (x, y))
    rings = []
    for me in range(0, agents, 7):
        found, ring, walked = module.search(x, y, in_game, me, side, nearest)
        others = np.flatnonzero(in_game & (np.arange(agents) != me))
        true = others[np.argsort((x[others] - x[me]) ** 2 + (y[others] - y[me]) ** 2)[:nearest]]
        reach = np.maximum(abs(cells_x[true] - cells_x[me]), abs(cells_y[true] - cells_y[me]))
        assert reach.max() <= ring and found >= nearest
        assert len(walked) == ring + 1 and sum(map(sum, walked)) == found  # every cell once
        rings.append(ring)
    assert max(rings) > 0  # some agent looked past its own cell: the rule was exercised
    _, lane, warp, together, _ = module.model(agents, playing, per_cell, nearest, warps=8)
    assert nearest <= lane <= warp <= together
    # the same agents in the grid's order (grid_by_cell): the same lanes, other warps
    _, by_cell, warp, together, _ = module.model(agents, playing, per_cell, nearest, warps=8,
                                                 order="cell")
    assert by_cell == pytest.approx(lane) and nearest <= by_cell <= warp <= together


def test_learned_against_chaser_in_workers_scores_every_seed_once(tmp_path, bench_script,
                                                                  monkeypatch):
    """--workers 2: two processes train the seeds (0 and 2 in one, 1 in the other), and the
    result holds each seed's run once, in order, with its intervals over all three. On the
    CPU, on any machine: a machine with one GPU refuses two workers (the test below)."""
    import torch

    monkeypatch.setattr(torch.cuda, "device_count", lambda: 0)
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "")  # the workers see no GPU either
    result = bench_script("learned_vs_chaser").main(
        [str(tmp_path / "lc.json"), "--seconds", "0.3", "--seeds", "3", "--eval-envs", "2",
         "--workers", "2", "--set", "env.params.episode_length=20"])
    assert result["seeds"] == [0, 1, 2] and result["workers"] == 2
    assert [run["seed"] for run in result["runs"]] == [0, 1, 2]
    assert result["params"]["episode_length"] == 20  # the workers played the game asked
    assert all(run["iterations"] >= 1 for run in result["runs"])
    rows = {row["score"]: row for row in result["rows"]}
    assert set(rows["learned - chaser, random runners"]["per_seed"]) == {0, 1, 2}
    assert json.loads((tmp_path / "lc.json").read_text())["seeds"] == [0, 1, 2]


@pytest.mark.parametrize("argv, words", [
    (["--seeds", "2", "--workers", "3"], "--workers from 1 to --seeds"),
    (["--seeds", "0"], "--seeds must be at least 1"),
])
def test_learned_against_chaser_refuses_workers_it_cannot_use(tmp_path, bench_script, capsys,
                                                              argv, words):
    with pytest.raises(SystemExit):
        bench_script("learned_vs_chaser").main([str(tmp_path / "lc.json"), *argv])
    assert words in capsys.readouterr().err


def test_learned_against_chaser_gives_each_worker_a_gpu_or_refuses(tmp_path, bench_script,
                                                                    capsys, monkeypatch):
    """With fewer GPUs than workers, seeds would share a GPU and train less in their minute:
    refused before any training, saying how many workers the machine can take."""
    import torch

    monkeypatch.setattr(torch.cuda, "device_count", lambda: 2)
    with pytest.raises(SystemExit):
        bench_script("learned_vs_chaser").main([str(tmp_path / "lc.json"), "--seeds", "4",
                                                "--workers", "3"])
    assert "Give --workers 2 or fewer" in capsys.readouterr().err
    assert not (tmp_path / "lc.json").exists()


def test_observe_twin_times_the_step_with_the_grid_search_in_smaller_blocks(tmp_path,
                                                                            bench_script):
    """bench/observe_twin.py at toy size on the simulator: the twin equals the plain
    observe, and --grid-threads adds a step row for each block size of the grid search, its
    slots checked equal to those of the game's own blocks on the same state."""
    from wd_teach.floors import set_fast

    out = tmp_path / "ot.json"
    try:
        status = bench_script("observe_twin").main(
            [str(out), "--envs", "2", "--agents", "40", "--backends", "numba", "--calls", "1",
             "--grid-threads", "32,16"])
    finally:
        set_fast("reset")
    rows = json.loads(out.read_text())["rows"]
    assert status == 0
    assert [(r["observe"], r.get("grid_threads")) for r in rows] == [
        ("plain", None), ("twin", None), ("twin", 32), ("twin", 16)]
    assert all(r["same"] and r["step_ms"] > 0 for r in rows)
