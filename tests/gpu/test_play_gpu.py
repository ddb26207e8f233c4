"""`wd-teach train` then `wd-teach play` on the GPU, under both kernel backends: a tiny Tag
continuous run (taggers and runners, a game that draws itself) trained on the GPU is played
back there with the run's backend, prints the metrics the training's evaluation printed,
says which settings it used, and writes a GIF of one picture per recorded step. The same
flow and checks as tests/test_play_tag.py, which runs them on the CPU with NumPy."""

import pytest
from test_play_tag import check_played, train_then_play

from wd_teach.device import BACKENDS


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_tag_run_trained_on_the_gpu_plays_back_there_with_its_metrics_settings_and_a_gif(
        backend, tmp_path, monkeypatch, capsys):
    run = train_then_play(tmp_path / "tag", backend, monkeypatch, capsys)
    check_played(run, backend, "cuda")
