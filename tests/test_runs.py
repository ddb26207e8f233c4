"""Nothing lost: a run folder is never overwritten, a run killed at any moment leaves its
last whole checkpoint, a checkpoint loads without running code or is refused with a clear
message, a load is all or nothing, and --resume refuses what a checkpoint fixes."""

import hashlib
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
import torch
from safetensors.torch import save_file

import wd_teach.train.checkpoint
from wd_teach.cli import main
from wd_teach.errors import TrainError
from wd_teach.train.checkpoint import (
    FORMAT_NAME,
    latest_checkpoint,
    read_checkpoint,
    to_json_tree,
    write_checkpoint,
)
from wd_teach.train.trainer import Trainer

#: CartPole at toy size, from the command line: a run of two iterations takes a second.
TINY_CLI = ["--envs", "4", "--set", "trainer.steps=8", "--set", "algorithm.num_minibatches=2",
            "--quiet"]
TINY_SETS = ["env.num_envs=4", "trainer.steps=8", "algorithm.num_minibatches=2"]
#: Tag with two policies, A2C, at toy size.
TINY_TAG = ["env.num_envs=2", "trainer.steps=8"]


def tiny_cartpole(*more) -> Trainer:
    return Trainer("cartpole", gpu=False, sets=[*TINY_SETS, *more])


def hashes(folder: Path) -> dict[str, str]:
    """Every file under `folder` and the SHA-256 of its bytes."""
    return {str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(folder.rglob("*")) if p.is_file()}


def same_state(a: dict, b: dict) -> bool:
    """Two Trainer.state_dict()s equal: the JSON parts as text (NaN equals NaN there) and
    every tensor bit for bit."""
    tensors_a, tensors_b = {}, {}
    tree_a, tree_b = to_json_tree(a, "", tensors_a), to_json_tree(b, "", tensors_b)
    return (json.dumps(tree_a) == json.dumps(tree_b) and tensors_a.keys() == tensors_b.keys()
            and all(torch.equal(tensors_a[k], tensors_b[k]) for k in tensors_a))


@pytest.fixture(scope="module")
def finished(tmp_path_factory) -> Path:
    """A finished CLI run of two iterations with a checkpoint after each."""
    out = tmp_path_factory.mktemp("finished") / "run"
    assert main(["train", "cartpole", "--iterations", "2", *TINY_CLI,
                 "--set", "trainer.checkpoint_every=1", "--out", str(out)]) == 0
    return out


@pytest.fixture
def run(finished, tmp_path) -> Path:
    """A copy of the finished run, for a test to try to change."""
    return Path(shutil.copytree(finished, tmp_path / "run"))


# -- a run folder is never overwritten ---------------------------------------------------------


def test_a_new_run_into_a_folder_holding_a_run_is_refused_and_changes_nothing(run, capsys):
    before = hashes(run)
    assert main(["train", "cartpole", "--iterations", "1", *TINY_CLI, "--out", str(run)]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"wd-teach: {run} already holds a run")
    assert "--out DIR" in err and f"--resume {run}" in err and "--force" in err
    assert hashes(run) == before


def test_the_default_folder_is_refused_too(run, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "runs").mkdir()
    run.rename(tmp_path / "runs" / "cartpole")
    before = hashes(tmp_path / "runs")
    assert main(["train", "cartpole", "--iterations", "1", *TINY_CLI]) == 2
    assert "runs/cartpole already holds a run" in capsys.readouterr().err
    assert hashes(tmp_path / "runs") == before


def test_force_replaces_the_old_run_and_leaves_other_files(run):
    (run / "notes.txt").write_text("mine")
    (run / ".checkpoint.safetensors.123.tmp").write_bytes(b"half")  # a crash's leftover
    assert main(["train", "cartpole", "--iterations", "1", *TINY_CLI, "--out", str(run),
                 "--force"]) == 0
    names = {p.name for p in run.iterdir()}
    assert "checkpoint_00001.safetensors" not in names  # the old run's: deleted, not mixed
    assert names == {"notes.txt", "config.yaml", "metrics.csv", "metrics.json",
                     "learning_curve.png", "checkpoint.safetensors"}
    history = json.loads((run / "metrics.json").read_text())["history"]
    assert [row["iteration"] for row in history] == [1]


@pytest.mark.parametrize("iterations", ["0", "-3"])
def test_iterations_below_one_are_refused_before_anything_is_written(iterations, tmp_path,
                                                                     capsys):
    out = tmp_path / "run"
    assert main(["train", "cartpole", "--iterations", iterations, *TINY_CLI,
                 "--out", str(out)]) == 2
    assert f"--iterations {iterations}: a run needs at least 1 iteration" in (
        capsys.readouterr().err)
    assert not out.exists()


def test_a_bad_config_with_force_deletes_nothing(run, capsys):
    """--force deletes the old run only once the new one is built."""
    before = hashes(run)
    assert main(["train", "cartpole", "--set", "trainer.lrr=1", "--out", str(run),
                 "--force"]) == 2
    assert "Did you mean 'trainer.lr'" in capsys.readouterr().err
    assert hashes(run) == before


#: A bad logger, given each way the command takes one: (flags, what stderr says).
BAD_LOGGERS = [
    (["--logger", "foo"], r"--logger: invalid choice: 'foo'"),
    (["--set", "trainer.logger=foo"],
     r"trainer.logger must be one of csv, tensorboard, got 'foo'"),
    (["--set", "trainer.logger=[tensorboard]"],
     r"trainer.logger must be a string, got \['tensorboard'\]"),
]


@pytest.mark.parametrize("flags, message", BAD_LOGGERS)
def test_a_bad_logger_is_refused_before_anything_is_written(flags, message, run, capsys):
    """Refused before the run starts: with --force, the old run is still all there."""
    before = hashes(run)
    try:
        code = main(["train", "cartpole", *TINY_CLI, *flags, "--out", str(run), "--force"])
    except SystemExit as exit_:  # argparse's own refusal
        code = exit_.code
    assert code == 2
    assert re.search(message, capsys.readouterr().err)
    assert hashes(run) == before


# -- --resume -------------------------------------------------------------------------------------


def test_resume_refuses_every_flag_a_checkpoint_fixes_in_one_message(run, tmp_path, capsys):
    before = hashes(run)
    assert main(["train", "cartpole", "--resume", str(run / "checkpoint.safetensors"),
                 "--envs", "8", "--seed", "3", "--set", "trainer.lr=1", "--backend", "numpy",
                 "--config", "x.yaml", "--gpus", "2", "--quiet"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("wd-teach: --resume goes on exactly as the checkpoint's run would")
    for flag in ["--envs", "--seed", "--set", "--config", "--backend", "--gpus"]:
        assert f"{flag} (" in err, flag
    assert hashes(run) == before


@pytest.mark.parametrize("flag", [["--envs", "8"], ["--seed", "3"], ["--set", "trainer.lr=1"],
                                  ["--backend", "numpy"], ["--config", "x.yaml"],
                                  ["--gpus", "2"], ["--envs", "auto"]])
def test_resume_refuses_each_such_flag(run, flag, capsys):
    assert main(["train", "cartpole", "--resume", str(run), *flag]) == 2
    err = capsys.readouterr().err
    assert f"does not take {flag[0]} (" in err
    others = {"--envs", "--seed", "--set", "--config", "--backend", "--gpus"} - {flag[0]}
    assert not [other for other in others if f"{other} (" in err]


def test_resume_refuses_another_env(run, capsys):
    assert main(["train", "pendulum", "--resume", str(run / "checkpoint.safetensors")]) == 2
    assert "a checkpoint of 'cartpole', but the command names 'pendulum'" in (
        capsys.readouterr().err)


def test_resume_refuses_force_into_its_own_folder(run, capsys):
    before = hashes(run)
    assert main(["train", "cartpole", "--resume", str(run), "--force", "--quiet"]) == 2
    assert "it would delete the checkpoint the run goes on from" in capsys.readouterr().err
    assert hashes(run) == before


def test_resume_refuses_an_earlier_checkpoint_in_its_own_folder(run, capsys):
    before = hashes(run)
    assert main(["train", "cartpole", "--resume", str(run / "checkpoint_00001.safetensors"),
                 "--quiet"]) == 2
    err = capsys.readouterr().err
    assert "holds checkpoints later than checkpoint_00001.safetensors (iteration 1)" in err
    assert hashes(run) == before


def test_resume_into_another_folder_holding_a_run_is_refused(run, finished, capsys):
    before = hashes(run)
    assert main(["train", "cartpole", "--resume", str(finished), "--out", str(run),
                 "--quiet"]) == 2
    assert f"{run} already holds a run" in capsys.readouterr().err
    assert hashes(run) == before


def test_resume_takes_a_run_folder_and_goes_on_in_it(run):
    assert main(["train", "cartpole", "--resume", str(run), "--iterations", "1",
                 "--quiet"]) == 0
    history = json.loads((run / "metrics.json").read_text())["history"]
    assert [row["iteration"] for row in history] == [1, 2, 3]
    assert latest_checkpoint(run).name == "checkpoint.safetensors"
    assert read_checkpoint(run / "checkpoint_00003.safetensors")["iteration"] == 3


# -- checkpoint files ---------------------------------------------------------------------------


class RunsCode:
    """Unpickling this makes a folder: proof that a file's code ran."""

    def __init__(self, marker: Path):
        self.marker = str(marker)

    def __reduce__(self):
        return os.mkdir, (self.marker,)


def bad_files(folder: Path, good: Path) -> dict[str, tuple[Path, str]]:
    """Files that are not whole wd-teach checkpoints, and what the refusal says."""
    data = good.read_bytes()
    files = {}

    def make(name, content, says):
        path = folder / name
        path.write_bytes(content) if isinstance(content, bytes) else content(path)
        files[name] = (path, says)

    make("truncated.safetensors", data[:len(data) // 2], "is not a readable checkpoint")
    make("header_only.safetensors", data[:12], "is not a readable checkpoint")
    make("empty.safetensors", b"", "is not a readable checkpoint")
    make("random.safetensors", np.random.default_rng(0).bytes(4096),
         "is not a readable checkpoint")
    make("pickle.pt", lambda p: torch.save({"x": torch.zeros(2)}, p),
         "is a PyTorch pickle \\(torch.save\\), not a wd-teach checkpoint")
    make("evil.pt", lambda p: torch.save(RunsCode(folder / "ran"), p),
         "is a PyTorch pickle")
    make("foreign.safetensors", lambda p: save_file({"w": torch.zeros(3)}, p),
         "is a safetensors file, but not a wd-teach training checkpoint")
    make("bad_json.safetensors", lambda p: save_file(
        {"w": torch.zeros(3)}, p, metadata={"format": FORMAT_NAME, "version": "2",
                                            "state": "{not json"}),
         "is damaged: the JSON part")
    make("dangling.safetensors", lambda p: save_file(
        {"w": torch.zeros(3)}, p, metadata={"format": FORMAT_NAME, "version": "2",
                                            "state": '{"a": {"$tensor": "b"}}'}),
         "names the tensor 'b', which the file does not hold")
    make("other_version.safetensors", lambda p: save_file(
        {"w": torch.zeros(3)}, p, metadata={"format": FORMAT_NAME, "version": "1",
                                            "state": "{}"}),
         "of format version 1; this wd-teach reads version 2")
    return files


def test_bad_checkpoint_files_are_refused_with_what_they_are(finished, tmp_path):
    for path, says in bad_files(tmp_path, finished / "checkpoint.safetensors").values():
        with pytest.raises(TrainError, match=f"{path.name}.*{says}"):
            Trainer.from_checkpoint(path, gpu=False)
        with pytest.raises(TrainError, match=says):
            tiny_cartpole().load(path)
    assert not (tmp_path / "ran").exists()  # the evil pickle was never unpickled
    with pytest.raises(TrainError, match="no checkpoint at .*nothing.safetensors: no such file"):
        Trainer.from_checkpoint(tmp_path / "nothing.safetensors")


def test_the_command_line_refuses_a_bad_checkpoint_with_code_2(finished, tmp_path, capsys):
    files = bad_files(tmp_path, finished / "checkpoint.safetensors")
    for name in ["truncated.safetensors", "evil.pt", "foreign.safetensors"]:
        path = files[name][0]
        assert main(["train", "cartpole", "--resume", str(path), "--quiet"]) == 2
        err = capsys.readouterr().err
        assert err.startswith(f"wd-teach: {path}") and "Traceback" not in err, err
    assert not (tmp_path / "ran").exists()


def test_a_checkpoint_is_plain_safetensors_with_json(finished):
    """Any safetensors reader opens it; the JSON part names each tensor by its place."""
    from safetensors import safe_open

    with safe_open(str(finished / "checkpoint.safetensors"), framework="pt") as f:
        metadata, names = f.metadata(), set(f.keys())
    state = json.loads(metadata["state"])
    assert metadata["format"] == FORMAT_NAME and state["env"] == "cartpole"
    assert "generator" in names and any(n.startswith("learners.cart.policy.") for n in names)
    assert state["learners"]["cart"]["optimizer"]["state"]["$int_keys"]


# -- a load is all or nothing --------------------------------------------------------------------


@pytest.mark.parametrize("hidden", ["[8]", "[8, 8]"])  # fewer layers; narrower layers
def test_a_load_that_does_not_fit_leaves_the_trainer_as_it_was(hidden, tmp_path):
    other = Trainer("tag_continuous", gpu=False,
                    sets=[*TINY_TAG, f"policies.runners.hidden={hidden}"])
    path = other.save(tmp_path / "other.safetensors")
    trainer = Trainer("tag_continuous", gpu=False, sets=TINY_TAG)
    trainer.train(1, progress=False)
    before = trainer.state_dict()
    with pytest.raises(TrainError, match="learners.runners.policy.* the policy 'runners' "
                                         "differs \\(policies.runners.hidden"):
        trainer.load(path)
    assert same_state(trainer.state_dict(), before)


def test_a_load_failing_half_way_puts_the_trainer_back(tmp_path, monkeypatch):
    source = tiny_cartpole()
    source.train(2, progress=False)
    path = source.save(tmp_path / "checkpoint.safetensors")
    trainer = tiny_cartpole("trainer.seed=5")
    trainer.train(1, progress=False)
    before = trainer.state_dict()
    real = torch.set_rng_state  # set last of all: weights, store and RNGs are set by then
    calls = []

    def fails_the_first_time(state):
        calls.append(1)
        if len(calls) == 1:
            raise RuntimeError("disk on fire")
        real(state)

    monkeypatch.setattr(torch, "set_rng_state", fails_the_first_time)
    with pytest.raises(TrainError, match="failed half way .*disk on fire.*back as it was"):
        trainer.load(path)
    assert same_state(trainer.state_dict(), before)


def test_a_checkpoint_missing_or_adding_a_store_array_is_refused(tmp_path):
    trainer = tiny_cartpole()
    name = next(n for n in trainer.state_dict()["store"])
    state = trainer.state_dict()
    del state["store"][name]
    lacking = write_checkpoint(state, tmp_path / "lacking.safetensors")
    with pytest.raises(TrainError, match=f"lacks the store array\\(s\\) {name} "):
        tiny_cartpole().load(lacking)
    state = trainer.state_dict()
    state["store"]["bogus"] = torch.zeros(3)
    extra = write_checkpoint(state, tmp_path / "extra.safetensors")
    with pytest.raises(TrainError, match="holds store array\\(s\\) bogus that this"):
        tiny_cartpole().load(extra)


# -- a crash never leaves half a file ------------------------------------------------------------


def test_a_crash_while_writing_a_checkpoint_leaves_the_previous_one(tmp_path, monkeypatch):
    trainer = tiny_cartpole()
    path = trainer.save(tmp_path / "checkpoint.safetensors")
    before = path.read_bytes()
    real_save = wd_teach.train.checkpoint.save_file

    def dies_half_way(tensors, filename, metadata):
        real_save(tensors, filename, metadata=metadata)
        Path(filename).write_bytes(Path(filename).read_bytes()[:100])  # half written ...
        raise KeyboardInterrupt  # ... and then the process is stopped

    monkeypatch.setattr(wd_teach.train.checkpoint, "save_file", dies_half_way)
    trainer.train(1, progress=False)
    with pytest.raises(KeyboardInterrupt):
        trainer.save(path)
    assert path.read_bytes() == before
    assert [p.name for p in tmp_path.iterdir()] == ["checkpoint.safetensors"]
    assert Trainer.from_checkpoint(path, gpu=False).iteration == 0


def test_a_run_killed_mid_training_leaves_its_last_checkpoint_loadable(tmp_path):
    out = tmp_path / "run"
    command = [sys.executable, "-m", "wd_teach.cli", "train", "cartpole", "--iterations",
               "100000", *TINY_CLI, "--set", "trainer.checkpoint_every=1", "--out", str(out)]
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 240
        while len(list(out.glob("checkpoint_*.safetensors"))) < 3:
            assert process.poll() is None, process.stderr.read().decode()
            assert time.monotonic() < deadline, "no checkpoints after 240 s"
            time.sleep(0.05)
        time.sleep(0.13)  # somewhere in an iteration, or in a write
    finally:
        process.send_signal(signal.SIGKILL)
        process.wait()
        process.stderr.close()
    for path in out.glob("checkpoint*.safetensors"):  # every one whole, none half
        assert read_checkpoint(path)["iteration"] == int(path.stem.split("_")[1])
    latest = latest_checkpoint(out)
    resumed = Trainer.from_checkpoint(latest)
    assert resumed.iteration == int(latest.stem.split("_")[1]) >= 3
    leftovers = [p.name for p in out.iterdir() if p.name.endswith(".tmp")]
    assert all(p.startswith(".") for p in leftovers)  # hidden, never checkpoint*.safetensors
    # The killed run's folder is a run: a new one is refused, --resume goes on from it.
    assert main(["train", "cartpole", "--iterations", "1", *TINY_CLI, "--out", str(out)]) == 2


def test_a_lightning_checkpoint_is_read_without_running_code(tmp_path):
    """Lightning's checkpoints are pickles: read with torch's weights-only unpickler."""
    from wd_teach.train.lightning import TrainingModule

    module = TrainingModule("cartpole", gpu=False, sets=TINY_SETS)
    torch.save(RunsCode(tmp_path / "ran"), tmp_path / "evil.ckpt")
    (tmp_path / "random.ckpt").write_bytes(np.random.default_rng(0).bytes(512))
    torch.save({"state_dict": {}}, tmp_path / "other.ckpt")
    for name, says in [("evil.ckpt", "holds more than weights"),
                       ("random.ckpt", "is not a readable Lightning checkpoint"),
                       ("other.ckpt", "not a Lightning checkpoint of a wd-teach"),
                       ("none.ckpt", "no Lightning checkpoint at")]:
        with pytest.raises(TrainError, match=f"{name}.*{says}|{says}.*{name}"):
            module.load_lightning_checkpoint(tmp_path / name)
    assert not (tmp_path / "ran").exists()


# -- a run's files share one mode -----------------------------------------------------------------


def test_a_runs_files_all_have_the_mode_of_a_new_file(tmp_path):
    """The checkpoints too: safetensors writes its files 0o600, which left a run's
    checkpoints private while its metrics were readable; every file now gets what the umask
    gives a new file (0o644 under the usual 022, 0o600 under 077)."""
    for umask in (0o022, 0o077):
        old = os.umask(umask)
        try:
            out = tmp_path / f"run{umask:o}"
            assert main(["train", "cartpole", "--iterations", "1", *TINY_CLI,
                         "--set", "trainer.checkpoint_every=1", "--out", str(out)]) == 0
        finally:
            os.umask(old)
        modes = {p.name: oct(p.stat().st_mode & 0o777) for p in out.iterdir() if p.is_file()}
        assert {"checkpoint.safetensors", "checkpoint_00001.safetensors",
                "metrics.csv", "config.yaml"} <= set(modes)
        assert set(modes.values()) == {oct(0o666 & ~umask)}, modes


def test_a_backend_given_as_the_package_s_constant_is_written_as_its_name(tmp_path):
    """wd_teach's backends are str subclasses (wd_teach.backends.NUMPY); a run given one
    (a notebook's `backend`, not a typed string) writes config.yaml and its checkpoint
    with the plain name, and resumes from it."""
    from wd_teach.backends import NUMPY
    from wd_teach.train.trainer import Trainer

    folder = tmp_path / "run"
    assert main(["train", "cartpole", "--out", str(folder), "--quiet", "--backend", NUMPY,
                 "--envs", "4", "--iterations", "1"]) == 0
    assert "  backend: numpy\n" in (folder / "config.yaml").read_text()
    resumed = Trainer.from_checkpoint(latest_checkpoint(folder), gpu=False)
    assert resumed.backend == "numpy" and type(resumed.config.env.backend) is str
