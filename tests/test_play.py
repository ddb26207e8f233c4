"""`wd-teach play RUN` (wd_teach/train/play.py, video.py, runs.open_run): a run trained here
on the CPU with settings that are not the defaults is played back with those very settings,
scores what `wd-teach train` scored, writes a video of one game, and refuses bad input
before it plays."""

import contextlib
import io
import re
import shutil
from pathlib import Path

import numpy as np
import pytest
import yaml

from wd_teach.cli import main
from wd_teach.env import Env
from wd_teach.errors import TrainError
from wd_teach.train import play as play_module
from wd_teach.train import video
from wd_teach.train.config import load_config
from wd_teach.train.play import play_run
from wd_teach.train.runs import open_run
from wd_teach_envs.acrobot.env import Acrobot
from wd_teach_envs.cartpole.env import CartPole
from wd_teach_envs.tag_continuous.env import TagContinuous

#: Not cartpole's defaults (fp32, 500 steps, seed 0): each must come back from the run.
RUN_SETTINGS = ["--seed", "5", "--envs", "4", "--iterations", "1",
                "--set", "trainer.precision=bf16", "--set", "env.params.episode_length=30",
                "--set", "trainer.steps=16"]


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    """A tiny cartpole run and the evaluation line `wd-teach train` printed at its end."""
    folder = tmp_path_factory.mktemp("play") / "cartpole"
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        assert main(["train", "cartpole", "--out", str(folder), "--quiet", *RUN_SETTINGS]) == 0
    return folder, next(line for line in printed.getvalue().splitlines()
                        if line.startswith("evaluated on"))


def test_play_takes_every_setting_from_the_run_and_says_where_from(run):
    folder, _ = run
    played = play_run(open_run(folder), episodes=3, record=False)
    evaluation, used = played.evaluation, {s.name: s for s in played.settings}
    assert evaluation.precision == "bf16"
    assert evaluation.steps == played.trainer.env.episode_length == 30
    assert evaluation.greedy and evaluation.seed == 6  # the training's evaluation: seed + 1
    # the run's backend: its config's, or this machine's default where the config names none
    assert evaluation.backend == played.trainer.wrapper.backend and evaluation.num_envs == 3
    assert played.trainer.config.trainer.precision == "bf16"
    for name, key in [("precision", "trainer.precision"),
                      ("episode length", "env.params.episode_length")]:
        assert used[name].source == f"the run's config ({key})"
    # A CPU run's config names its backend (numpy, from CartPole's cpu block); a GPU run's
    # leaves it to the machine, and play says so.
    if played.trainer.config.env.backend:
        assert used["backend"].source == "the run's config (env.backend)"
    else:
        assert used["backend"].source == "this machine's best (env.backend not in the run's config)"
    assert used["episodes"].source == "--episodes"
    assert used["seed"].source.startswith("the training's evaluation")
    assert used["actions"].value == "most probable"


def test_play_prints_the_scores_train_printed_and_a_gif(run, monkeypatch, capsys):
    folder, trained = run
    monkeypatch.setattr(video, "mp4_encoder", lambda: False)  # as without imageio-ffmpeg
    assert main(["play", str(folder)]) == 0
    out = capsys.readouterr().out
    assert trained in out.splitlines()  # the same games, the same scores
    for line in ["precision       bf16", "episode length  30", "actions         most probable"]:
        assert line in out
    gif = folder / "play.gif"
    assert f"video of the first game: {gif}" in out
    assert gif.read_bytes()[:6] == b"GIF89a"


def test_play_writes_an_mp4_where_imageio_ffmpeg_is_installed(run, tmp_path):
    pytest.importorskip("imageio_ffmpeg")
    folder, _ = run
    assert video.video_path(None, folder / "play").suffix == ".mp4"
    path = tmp_path / "game.mp4"
    assert main(["play", str(folder), "--episodes", "2", "--video", str(path)]) == 0
    assert path.read_bytes()[4:8] == b"ftyp"  # an MP4 container


def test_sample_and_seed_are_said_to_be_the_users(run):
    folder, _ = run
    played = play_run(open_run(folder), episodes=2, seed=11, greedy=False, record=False)
    used = {s.name: s for s in played.settings}
    assert (used["actions"].value, used["actions"].source) == ("drawn from the policy",
                                                               "--sample")
    assert (used["seed"].value, used["seed"].source) == ("11", "--seed")


def test_a_video_has_one_picture_per_recorded_step(tmp_path, monkeypatch):
    monkeypatch.setattr(video, "mp4_encoder", lambda: False)
    frames = {"x": np.zeros((5, 1), np.float32), "theta": np.linspace(-0.1, 0.1, 5)[:, None]}
    path = video.write_video(CartPole(), frames, video.video_path(None, tmp_path / "g"))
    from PIL import Image

    with Image.open(path) as gif:
        assert path.suffix == ".gif" and gif.n_frames == 5


def test_tag_draws_with_the_lessons_drawing_and_others_say_they_do_not():
    assert video.draws(CartPole()) and video.draws(TagContinuous())
    assert not video.draws(Acrobot())
    game = TagContinuous(num_taggers=1, num_runners=2, num_nearest=2)
    frames = {n: np.zeros((2, 3), np.float32) for n in ("loc_x", "loc_y")}
    frames["in_game"] = np.ones((2, 3), np.int32)
    pictures = video.frame_pictures(game, frames)
    assert len(pictures) == 2 and pictures[0].shape == (480, 480, 3)


def test_an_env_that_does_not_draw_still_gets_its_scores(run, monkeypatch, capsys):
    folder, _ = run
    monkeypatch.setattr(CartPole, "draw_frame", Env.draw_frame)
    assert main(["play", str(folder), "--episodes", "2"]) == 0
    out = capsys.readouterr().out
    assert "evaluated on 2 fresh episodes" in out
    assert "no video: CartPole does not draw its games" in out


def copy_run(run, tmp_path, change=None) -> Path:
    """A copy of the run's folder, its config.yaml changed by `change(config)`."""
    copy = tmp_path / "copy"
    shutil.copytree(run[0], copy)
    if change is not None:
        config = yaml.safe_load((copy / "config.yaml").read_text())
        (copy / "config.yaml").write_text(yaml.safe_dump(change(config)))
    return copy


def no_config(run, tmp_path):
    (copy := copy_run(run, tmp_path)).joinpath("config.yaml").unlink()
    return [str(copy)], "is not a run's folder: it has no config.yaml"


def no_checkpoint(run, tmp_path):
    (copy := copy_run(run, tmp_path)).joinpath("checkpoint.safetensors").unlink()
    return [str(copy)], "holds a run but no checkpoint"


def another_env(run, tmp_path):
    copy = copy_run(run, tmp_path, lambda c: load_config("acrobot").to_dict())
    return [str(copy)], "is a checkpoint of 'cartpole', but its folder's config.yaml is a run "


def other_settings(run, tmp_path):
    copy = copy_run(run, tmp_path, lambda c: {**c, "trainer": {**c["trainer"], "lr": 0.5}})
    return [str(copy)], "was trained with other settings than its folder's config.yaml says " \
                        "(trainer.lr)"


def unwritable_video(run, tmp_path):
    (tmp_path / "a_file").write_text("")
    return [str(run[0]), "--video", str(tmp_path / "a_file" / "game.gif")], "cannot be written"


def not_a_video(run, tmp_path):
    return [str(run[0]), "--video", str(tmp_path / "game.avi")], "as .mp4 or .gif"


def a_backend_not_here(run, tmp_path):
    return [str(run[0]), "--backend", "pycuda"], "--backend: "


@pytest.mark.parametrize("case", [no_config, no_checkpoint, another_env, other_settings,
                                  unwritable_video, not_a_video, a_backend_not_here])
def test_bad_input_is_refused_before_any_game(case, run, tmp_path, monkeypatch, capsys):
    if case is a_backend_not_here and __import__("wd_teach").gpu_available():
        pytest.skip("PyCUDA may run on this machine")
    argv, said = case(run, tmp_path)
    monkeypatch.setattr(play_module, "play_run", lambda *a, **k: pytest.fail("it played"))
    assert main(["play", *argv]) == 2
    assert said in capsys.readouterr().err


@pytest.mark.parametrize("argv, said", [
    (["--episodes", "0"], "takes a positive whole number of episodes"),
    (["--backend", "cupy"], "invalid choice: 'cupy'")])
def test_bad_options_are_refused_by_the_parser(run, argv, said, capsys):
    with pytest.raises(SystemExit) as exit_:
        main(["play", str(run[0]), *argv])
    assert exit_.value.code == 2 and said in capsys.readouterr().err


def test_a_folder_that_is_no_run_is_said_to_be_so(tmp_path, capsys):
    assert main(["play", str(tmp_path / "nowhere")]) == 2
    assert re.search(r"nowhere: no such folder. Give a run's folder", capsys.readouterr().err)


def test_defaults_here_that_would_change_the_runs_env_are_refused(run, monkeypatch):
    """A run's config is laid over this machine's defaults: were an env parameter the run
    left out set here (as an env's `cpu` block may), its games would not be the run's."""
    from wd_teach.train import config as config_module

    defaults = config_module.default_config

    def here(env, gpu=None):
        raw = defaults(env, gpu)
        raw["env"]["params"] = {**(raw["env"].get("params") or {}), "gravity": 20.0}
        return raw

    monkeypatch.setattr(config_module, "default_config", here)
    with pytest.raises(TrainError, match="its config would change at env.params"):
        play_run(open_run(run[0]), episodes=1, record=False)
