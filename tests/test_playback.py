"""A trained run played back (wd_teach/train/playback.py), and the script that makes the
checkpoint the package ships (bench/train_tag_demo.py), at toy size on the CPU: the whole
path from training to the frames of an animation. The toy checkpoint is made here, in a
temporary folder: it is not the trained one."""

import importlib.util
import re
from pathlib import Path

import matplotlib
import pytest
import tomllib
import torch

from wd_teach.errors import TrainError
from wd_teach.train.checkpoint import read_checkpoint, write_checkpoint
from wd_teach.train.config import load_config
from wd_teach.train.playback import (
    PRETRAINED,
    load_trained,
    pretrained_checkpoint,
    shipped_checkpoints,
)
from wd_teach.train.trainer import Trainer

matplotlib.use("Agg")

REPO = Path(__file__).resolve().parents[1]
SCRIPT = REPO / "bench" / "train_tag_demo.py"


def script():
    spec = importlib.util.spec_from_file_location("bench_train_tag_demo", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def toy(tmp_path_factory):
    """The script's whole path at toy size: (the module, the checkpoint it wrote)."""
    demo = script()
    out = tmp_path_factory.mktemp("demo") / "tag_demo.safetensors"
    assert demo.main(["--tiny", "--out", str(out)]) == out
    return demo, out


def test_the_script_writes_a_small_checkpoint_and_the_config_that_made_it(toy):
    demo, path = toy
    assert path.stat().st_size < 2e6
    config_file = path.with_suffix(".yaml")
    text = config_file.read_text()
    assert text.startswith("# The run of wd_teach/train/pretrained/tag_demo.safetensors")
    assert re.search(r"trained taggers, random runners: \d+\.\d\d", text)
    config = load_config(config_file)  # the header is YAML comments: it trains again
    params = demo.DEMO["env"]["params"]
    assert config.env.params["num_taggers"] == params["num_taggers"]
    assert config.env.params["num_runners"] == params["num_runners"]
    assert config.env.num_envs == demo.TINY["env"]["num_envs"]  # the size it trained at
    resumed = Trainer.from_checkpoint(path)  # the shipped file is a whole checkpoint
    assert resumed.wrapper.num_envs == demo.SHIPPED_ENVS
    assert resumed.iteration == demo.TINY["trainer"]["iterations"]
    assert [row["iteration"] for row in resumed.history] == [1, 2, 3]


def test_the_history_is_thinned_to_a_few_hundred_rows_the_last_kept(toy):
    demo, _ = toy
    trainer = demo.make_trainer(tiny=True)
    trainer.history = [{"iteration": i} for i in range(1, 1_234)]
    trainer.iteration = 1_233
    kept = [row["iteration"] for row in demo.compact(trainer).history]
    assert len(kept) <= demo.HISTORY_ROWS and kept[-1] == 1_233 and kept[0] == 3


def test_load_trained_plays_the_trained_weights_at_a_small_size(toy):
    demo, path = toy
    state = read_checkpoint(path)
    trainer = load_trained(path)
    assert trainer.wrapper.num_envs == 1
    assert trainer.iteration == state["iteration"] and len(trainer.history) == 3
    fresh = demo.make_trainer(tiny=True)  # the same seed: the weights before training
    for name, policy in trainer.policies.items():
        saved = state["learners"][name]["policy"]
        assert all(torch.equal(p.cpu(), saved[k]) for k, p in policy.state_dict().items())
        assert not all(torch.equal(p, q) for p, q in zip(
            policy.parameters(), fresh.policies[name].parameters(), strict=True))


def test_an_episode_of_the_trained_run_animates_frame_by_frame(toy):
    from wd_teach_envs._tag import render

    _, path = toy
    trainer = load_trained(path)
    frames = trainer.evaluate(num_envs=1, record=True, seed=3, steps=4).frames
    assert set(frames) == {"loc_x", "loc_y", "in_game"}
    count = len(frames["loc_x"])
    assert 2 <= count <= 5 and all(f.shape == (count, 10) for f in frames.values())
    game = trainer.env.config
    html = render.animate_episode(frames, game.num_taggers, game.field_size,
                                  game.tagging_distance).to_jshtml()
    assert sorted(map(int, re.findall(r"frames\[(\d+)\] = ", html))) == list(range(count))


def test_a_toy_run_cannot_overwrite_the_shipped_checkpoint(capsys):
    with pytest.raises(SystemExit):
        script().main(["--tiny"])
    assert "--tiny makes a toy run, not the checkpoint that ships" in capsys.readouterr().err


def test_a_checkpoint_that_is_not_there_says_how_to_make_it():
    with pytest.raises(TrainError, match=r"no trained checkpoint 'chess'.*bench/train_chess\.py"):
        pretrained_checkpoint("chess")


def test_weights_that_do_not_fit_their_config_are_refused(toy, tmp_path):
    _, path = toy
    state = read_checkpoint(path)
    state["config"]["policies"]["taggers"]["hidden"] = [32]
    write_checkpoint(state, tmp_path / "other.safetensors")
    with pytest.raises(TrainError, match="weights of 'taggers' do not fit the policy"):
        load_trained(tmp_path / "other.safetensors")
    (tmp_path / "junk.safetensors").write_bytes(b"not a checkpoint")
    with pytest.raises(TrainError, match="not a readable checkpoint"):
        load_trained(tmp_path / "junk.safetensors")


def test_the_wheel_carries_the_trained_checkpoints_and_their_configs():
    patterns = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["setuptools"][
        "package-data"]["wd_teach"]
    for name in ("tag_demo.safetensors", "tag_demo.yaml"):
        relative = (PRETRAINED / name).relative_to(REPO / "wd_teach")
        assert any(relative.match(p) for p in patterns), f"{relative} is not package data"


def test_the_shipped_demo_loads_small_and_plays():
    assert "tag_demo" in shipped_checkpoints()  # trained by bench/train_tag_demo.py on a GPU
    path = pretrained_checkpoint("tag_demo")
    assert path.stat().st_size < 2e6 and path.with_suffix(".yaml").is_file()
    trainer = load_trained(path)
    assert trainer.iteration == trainer.history[-1]["iteration"] > 100
    assert len(trainer.evaluate(num_envs=1, record=True, steps=3).frames["loc_x"]) >= 2


def test_the_shipped_demo_holds_a_whole_training_run():
    """Not only its policies: every part a trainer of its config has (the statistics' running
    sums among them), so on a GPU it goes on training (tests/gpu/test_training_gpu.py). On the
    CPU only its GPU generator stops it, and the message says where to resume. The trainer
    here is a CPU one on any machine: the NumPy backend (with none named, a GPU machine's
    trainer takes PyCUDA, on the GPU, and there the generator fits)."""
    state = read_checkpoint(pretrained_checkpoint("tag_demo"))
    state["config"]["env"]["backend"] = "numpy"
    trainer = Trainer(state["config"], gpu=False)
    assert trainer.device.type == "cpu"
    with pytest.raises(TrainError, match="trained on a GPU and this trainer runs on the CPU"):
        trainer.load_state_dict(state, where="tag_demo")
    state["generator"] = trainer.generator.get_state()  # the one part of a device's own kind
    trainer.load_state_dict(state, where="tag_demo")
    assert trainer.iteration == 4000


def _before_shared(state: dict) -> dict:
    """A checkpoint's state as a run saved before policies.NAME.shared and .activation."""
    for policy in state["config"]["policies"].values():
        del policy["shared"], policy["activation"]
    return state


def test_a_run_saved_before_a_policy_setting_existed_plays_as_it_was_trained(tmp_path):
    """The shipped demo as it was first saved: its config has no policies.NAME.shared or
    .activation (they came later), and Tag's config.yaml now says shared: true, relu. The
    run's missing settings take their defaults, which kept the code's behaviour when they
    came (two tanh networks), not today's env config: it loads with its own weights."""
    state = _before_shared(read_checkpoint(pretrained_checkpoint("tag_demo")))
    old = write_checkpoint(state, tmp_path / "before_shared.safetensors")
    assert load_config("tag_continuous", gpu=False).policies["taggers"].shared  # today's
    played = load_trained(old, num_envs=2, gpu=False)
    for name, policy in played.policies.items():
        assert not played.config.policies[name].shared
        assert isinstance(policy.actor[1], torch.nn.Tanh)  # its own tanh layers
    assert torch.equal(played.policies["taggers"].actor[0].weight.cpu(),  # cuda where one is
                       state["learners"]["taggers"]["policy"]["actor.0.weight"])


def test_a_run_saved_before_a_policy_setting_existed_goes_on_training(tmp_path):
    small = ["env.num_envs=2", "trainer.steps=4", "env.params.num_taggers=1",
             "env.params.num_runners=2", "env.params.num_nearest=2",
             "policies.taggers.shared=false", "policies.runners.shared=false"]
    run = Trainer("tag_continuous", gpu=False, sets=small)
    run.train(1, progress=False)
    path = run.save(tmp_path / "run.safetensors")
    old = write_checkpoint(_before_shared(read_checkpoint(path)), tmp_path / "old.safetensors")
    resumed = Trainer.from_checkpoint(old, gpu=False)
    assert not resumed.config.policies["taggers"].shared
    assert resumed.config.policies["taggers"].activation is None  # tanh, A2C's
    resumed.train(1, progress=False)
    assert resumed.iteration == 2
