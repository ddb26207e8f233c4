"""TensorBoard: a run asked for it writes the history's scalars as it trains, at the run's
env steps, into its folder's tensorboard/; a run not asked writes none; and TensorBoard's own
reader reads them back. The Trainer, the command line and the Lightning module alike."""

import csv
import math
import sys

import pytest
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

from wd_teach.cli import main
from wd_teach.errors import TrainError
from wd_teach.train.logger import AXES, require_tensorboard
from wd_teach.train.trainer import Trainer

TINY = ["env.num_envs=4", "trainer.steps=8", "algorithm.num_minibatches=2"]
TINY_CLI = ["--envs", "4", "--set", "trainer.steps=8", "--set", "algorithm.num_minibatches=2",
            "--quiet"]


def read_events(folder) -> dict[str, list[tuple[int, float]]]:
    """Every scalar in the event files of `folder`: tag -> [(step, value), ...]."""
    events = EventAccumulator(str(folder), size_guidance={"scalars": 0})  # 0: keep them all
    events.Reload()
    return {tag: [(e.step, e.value) for e in events.Scalars(tag)]
            for tag in events.Tags()["scalars"]}


def expected(history: list[dict]) -> dict[str, list[tuple[int, float]]]:
    """What the history says the event files must hold: each finite number by env steps."""
    want: dict[str, list[tuple[int, float]]] = {}
    for row in history:
        for key, value in row.items():
            if key not in AXES and math.isfinite(value):
                want.setdefault(key, []).append((row["env_steps"], value))
    return want


def assert_same(found, want):
    assert set(found) == set(want)
    for tag, points in want.items():
        assert [step for step, _ in found[tag]] == [step for step, _ in points], tag
        assert [v for _, v in found[tag]] == pytest.approx([v for _, v in points],
                                                           rel=1e-6), tag


def test_a_trainer_writes_every_metric_at_its_env_steps(tmp_path):
    trainer = Trainer("cartpole", gpu=False, sets=TINY, logger="tensorboard")
    trainer.train(3, progress=False, out=tmp_path, profile=True)
    found = read_events(tmp_path / "tensorboard")
    assert_same(found, expected(trainer.history))
    # what the progress bar shows, the losses, the speed and the profile's phases
    assert {"cart/reward", "cart/loss", "steps_per_second", "time/policy"} <= set(found)
    assert [s for s, _ in found["steps_per_second"]] == [32, 64, 96]


def test_rows_are_written_as_the_run_trains_not_at_its_end(tmp_path):
    """A run that fails in its third iteration has written the first two."""
    trainer = Trainer("cartpole", gpu=False, sets=TINY, logger="tensorboard")

    def fail_third(trainer, row):
        if trainer.iteration == 3:
            raise RuntimeError("stopped")

    with pytest.raises(RuntimeError, match="stopped"):
        trainer.train(5, progress=False, out=tmp_path, callback=fail_third)
    assert [s for s, _ in read_events(tmp_path / "tensorboard")["seconds"]] == [32, 64]


def test_a_second_train_call_goes_on_at_later_steps(tmp_path):
    trainer = Trainer("cartpole", gpu=False, sets=TINY, logger="tensorboard")
    trainer.train(2, progress=False, out=tmp_path)
    trainer.train(2, progress=False, out=tmp_path)
    found = read_events(tmp_path / "tensorboard")
    assert [s for s, _ in found["seconds"]] == [32, 64, 96, 128]
    assert_same(found, expected(trainer.history))


def test_the_csv_logger_writes_no_events(tmp_path):
    trainer = Trainer("cartpole", gpu=False, sets=TINY)
    assert trainer.config.trainer.logger == "csv"
    trainer.train(1, progress=False, out=tmp_path)
    assert not (tmp_path / "tensorboard").exists()


def test_a_missing_tensorboard_says_what_to_install(monkeypatch, tmp_path):
    monkeypatch.setitem(sys.modules, "tensorboard", None)  # import tensorboard now fails
    with pytest.raises(TrainError, match=r"needs the tensorboard package.*pip install "
                                         r"tensorboard"):
        require_tensorboard()
    trainer = Trainer("cartpole", gpu=False, sets=TINY, logger="tensorboard")
    with pytest.raises(TrainError, match="pip install tensorboard"):
        trainer.train(1, progress=False, out=tmp_path)
    assert trainer.iteration == 0 and not (tmp_path / "tensorboard").exists()


def test_the_command_line_writes_events_beside_the_csv(tmp_path, capsys):
    out = tmp_path / "run"
    assert main(["train", "cartpole", "--iterations", "3", *TINY_CLI, "--logger",
                 "tensorboard", "--out", str(out)]) == 0
    assert f"tensorboard --logdir {out}" in capsys.readouterr().out
    with (out / "metrics.csv").open() as f:  # still written, and the same numbers
        history = [{k: float(v) if v else math.nan for k, v in row.items()}
                   for row in csv.DictReader(f)]
    assert {"metrics.json", "learning_curve.png", "checkpoint.safetensors"} <= {
        p.name for p in out.iterdir()}
    assert_same(read_events(out / "tensorboard"), expected(history))


def test_resume_takes_logger_and_force_deletes_the_old_events(tmp_path):
    out = tmp_path / "run"
    assert main(["train", "cartpole", "--iterations", "2", *TINY_CLI, "--out", str(out)]) == 0
    assert main(["train", "cartpole", "--iterations", "1", "--quiet", "--resume", str(out),
                 "--logger", "tensorboard"]) == 0
    assert [s for s, _ in read_events(out / "tensorboard")["seconds"]] == [96]
    assert main(["train", "cartpole", "--iterations", "1", *TINY_CLI, "--logger",
                 "tensorboard", "--out", str(out), "--force"]) == 0
    assert [s for s, _ in read_events(out / "tensorboard")["seconds"]] == [32]


def test_the_lightning_module_writes_events_at_env_steps(tmp_path):
    from wd_teach.train.lightning import TrainingModule, make_lightning_trainer

    module = TrainingModule("cartpole", gpu=False, sets=TINY, logger="tensorboard")
    make_lightning_trainer(module, 3, out=tmp_path, progress=False).fit(module)
    found = read_events(tmp_path / "tensorboard")
    assert {"cart/loss", "steps_per_second", "env_steps"} <= set(found)
    assert "hp_metric" not in found
    for tag in ("cart/loss", "steps_per_second", "cart/reward"):
        assert [s for s, _ in found[tag]] == [32, 64, 96]
        assert [v for _, v in found[tag]] == pytest.approx(
            [row[tag] for row in module.history], rel=1e-6)
    assert list(tmp_path.glob("logs/*/metrics.csv"))  # the CSV log as before


def test_the_lightning_module_needs_a_folder_for_events():
    from wd_teach.train.lightning import TrainingModule, make_lightning_trainer

    module = TrainingModule("cartpole", gpu=False, sets=TINY, logger="tensorboard")
    with pytest.raises(TrainError, match="writes its event files into the run's folder"):
        make_lightning_trainer(module, 1, progress=False)


def test_a_data_parallel_run_writes_one_log_of_the_averaged_rows(tmp_path):
    """Rank 0 writes the events (every rank's env steps counted); the others write none."""
    from wd_teach.scale.distributed import train_data_parallel

    history = train_data_parallel("cartpole", 2, 2, sets=[*TINY, "trainer.logger=tensorboard"],
                                  out=tmp_path, gpu=False, progress=False)
    assert len(list((tmp_path / "tensorboard").glob("events.out.tfevents.*"))) == 1
    found = read_events(tmp_path / "tensorboard")
    assert [s for s, _ in found["seconds"]] == [64, 128]
    assert_same(found, expected(history))
