"""`wd-teach train` then `wd-teach play` on a game of several agents that draws its games
(Tag continuous, taggers and runners): the run trained here is played back through the same
command line a learner types, prints the metrics the training's evaluation printed, says
which settings it used and where each came from, and writes a GIF of one picture per
recorded step. Here on the CPU with the NumPy env; tests/gpu/test_play_gpu.py runs the same
flow (`train_then_play`, `check_played`) on a GPU under each kernel backend."""

import re
from dataclasses import dataclass
from pathlib import Path

import yaml
from PIL import Image

from wd_teach.cli import main
from wd_teach.train import play as play_module
from wd_teach.train import video
from wd_teach.train.evaluation import EVALUATION_EPISODES
from wd_teach.train.play import Played

#: A run of seconds: 2 taggers and 5 runners, 20-step episodes, two iterations of 4 envs.
EPISODE_LENGTH, SEED = 20, 3
TINY_TAG = ["--envs", "4", "--iterations", "2", "--seed", str(SEED),
            "--set", "env.params.num_taggers=2", "--set", "env.params.num_runners=5",
            "--set", "env.params.num_nearest=3",
            "--set", f"env.params.episode_length={EPISODE_LENGTH}",
            "--set", "trainer.steps=10",
            "--set", "policies.taggers.hidden=[32, 32]",
            "--set", "policies.runners.hidden=[32, 32]"]

#: Every setting `wd-teach play` lists under "played with:" (wd_teach.train.play.settings_used).
SETTINGS = {"env", "env params", "episode length", "steps played", "precision", "actions",
            "episodes", "seed", "backend", "checkpoint"}


@dataclass
class TrainedAndPlayed:
    """What `train_then_play` saw: the run's folder, what `wd-teach train` and
    `wd-teach play` printed, and what play_run returned to the command."""

    folder: Path
    trained: str
    played: str
    result: Played


def train_then_play(folder: Path, backend: str, monkeypatch, capsys) -> TrainedAndPlayed:
    """Train TINY_TAG on `backend` into `folder`, then `wd-teach play` it with every default
    (the training's own evaluation, its 100 episodes, a video beside the run), as a GIF:
    the encoder Pillow always has, as on a machine without imageio-ffmpeg."""
    monkeypatch.setattr(video, "mp4_encoder", lambda: False)
    results = []
    real_play_run = play_module.play_run

    def play_run(*args, **kwargs):  # the command's own call, kept to look at its games
        results.append(real_play_run(*args, **kwargs))
        return results[-1]

    monkeypatch.setattr(play_module, "play_run", play_run)
    assert main(["train", "tag_continuous", "--out", str(folder), "--quiet",
                 "--backend", backend, *TINY_TAG]) == 0
    trained = capsys.readouterr().out
    assert main(["play", str(folder)]) == 0
    played = capsys.readouterr().out
    assert len(results) == 1
    return TrainedAndPlayed(folder, trained, played, results[0])


def evaluation_line(printed: str) -> str:
    """The one `evaluated on ...` line of a command's output."""
    lines = [line for line in printed.splitlines() if line.startswith("evaluated on")]
    assert len(lines) == 1, printed
    return lines[0]


def metric_names(line: str) -> list[str]:
    """The metrics of an `evaluated on N fresh episodes, ...: name value, ...` line, in the
    order it prints them."""
    scores = line.split(": ", 1)[1]
    return [score.rsplit(" ", 1)[0] for score in scores.split(", ")]


def settings_table(printed: str) -> dict[str, tuple[str, str]]:
    """`wd-teach play`'s "played with:" table: each setting's (value, source)."""
    table = printed.split("played with:\n", 1)[1]
    used = {}
    for line in table.splitlines():
        row = re.fullmatch(r"  (\S+(?: \S+)*) {2,}(\S.*?) {2,}from (.+)", line)
        if row is None:
            break  # the table ends where its rows do
        used[row[1]] = (row[2], row[3])
    return used


def check_played(run: TrainedAndPlayed, backend: str, device: str) -> None:
    """What `wd-teach play` must show of the run `train_then_play` made on `backend`, with
    both commands on `device` ("cpu" or "cuda")."""
    where = "GPU" if device == "cuda" else "CPU"
    assert f"on the {where}; writing to {run.folder}/" in run.trained
    trainer = run.result.trainer
    assert trainer.device.type == device and trainer.backend == backend

    # The same metrics as the training's evaluation, taggers' and runners' among them.
    names = metric_names(evaluation_line(run.played))
    assert names == metric_names(evaluation_line(run.trained))
    assert {"taggers/return", "runners/return"} <= set(names)

    # Which settings it used, and where each came from.
    used = settings_table(run.played)
    assert set(used) == SETTINGS, run.played
    config = yaml.safe_load((run.folder / "config.yaml").read_text())
    assert used["env"] == ("tag_continuous", "the run's config (env.name)")
    assert used["backend"] == (backend, "the run's config (env.backend)")
    assert used["episode length"] == (str(EPISODE_LENGTH),
                                      "the run's config (env.params.episode_length)")
    precision, source = used["precision"]
    assert precision.split()[0] == config["trainer"]["precision"]
    assert source == "the run's config (trainer.precision)"
    assert used["actions"] == ("most probable", "the training's evaluation (most probable)")
    assert used["episodes"] == (str(EVALUATION_EPISODES),
                                f"the training's evaluation ({EVALUATION_EPISODES})")
    assert used["seed"] == (str(SEED + 1), "the training's evaluation (trainer.seed + 1)")
    assert used["checkpoint"] == ("checkpoint.safetensors",
                                  f"{run.folder} (iteration 2)")

    # A GIF of env 0's first game, one picture per recorded step (the start, then each step).
    gif = run.folder / "play.gif"
    assert f"video of the first game: {gif}" in run.played
    assert gif.stat().st_size > 0 and gif.read_bytes()[:6] == b"GIF89a"
    frames = run.result.evaluation.frames
    assert set(frames) == {"loc_x", "loc_y", "in_game"}
    recorded = len(frames["loc_x"])
    assert 2 <= recorded <= EPISODE_LENGTH + 1
    with Image.open(gif) as pictures:
        assert pictures.n_frames == recorded


def test_a_tag_run_trained_here_plays_back_with_its_metrics_settings_and_a_gif(
        tmp_path, monkeypatch, capsys):
    run = train_then_play(tmp_path / "tag", "numpy", monkeypatch, capsys)
    check_played(run, "numpy", "cpu")
    # On the CPU the games are the training's evaluation's, score for score.
    assert evaluation_line(run.played) == evaluation_line(run.trained)
