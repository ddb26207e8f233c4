"""Training on the CPU: it learns, it resumes bit for bit, it keeps off the host in the loop,
and it says clearly what is wrong with a bad config or checkpoint."""

import json
import re

import numpy as np
import pytest
import torch

from wd_teach.cli import main
from wd_teach.errors import ConfigError, TrainError
from wd_teach.train.trainer import Trainer

#: Tiny runs of each algorithm, for the resume and loop tests (CPU defaults, smaller).
TINY = {
    "ppo": ("cartpole", ["env.num_envs=4", "trainer.steps=16", "algorithm.num_minibatches=2"]),
    "a2c": ("tag_continuous", ["env.num_envs=2", "trainer.steps=8"]),
    "ddpg": ("pendulum", ["env.num_envs=2", "trainer.steps=8", "algorithm.replay_size=160",
                          "algorithm.learning_starts=16", "algorithm.batch_size=8",
                          "algorithm.updates_per_iteration=2"]),
}
TIMING_KEYS = ("seconds", "steps_per_second")


def tiny(name, *more):
    env, sets = TINY[name]
    return Trainer(env, gpu=False, sets=[*sets, *more])


def same_rows(a, b):
    """History rows equal, NaN equal to NaN, wall-clock timings left out."""
    assert len(a) == len(b)
    for left, right in zip(a, b, strict=True):
        keys = [k for k in left if k not in TIMING_KEYS and not k.startswith("time/")]
        assert keys == [k for k in right if k not in TIMING_KEYS and not k.startswith("time/")]
        np.testing.assert_array_equal([left[k] for k in keys], [right[k] for k in keys])


def test_cartpole_returns_improve_under_ppo():
    trainer = Trainer("cartpole", gpu=False, sets=["trainer.seed=0"])
    trainer.train(12, progress=False)
    returns = [row["cart/return"] for row in trainer.history]
    first, last = np.nanmean(returns[:3]), np.nanmean(returns[-3:])
    assert last > first + 25, f"mean return went from {first:.1f} to {last:.1f}"


@pytest.mark.parametrize("algorithm", list(TINY))
def test_resume_equals_an_uninterrupted_run_bit_for_bit(algorithm, tmp_path):
    straight = tiny(algorithm)
    straight.train(4, progress=False)

    first = tiny(algorithm)
    first.train(2, progress=False)
    path = first.save(tmp_path / "checkpoint.safetensors")
    resumed = Trainer.from_checkpoint(path, gpu=False)
    assert resumed.iteration == 2
    resumed.train(2, progress=False)

    for name, policy in straight.policies.items():
        for (key, want), got in zip(policy.state_dict().items(),
                                    resumed.policies[name].state_dict().values(), strict=True):
            assert torch.equal(want, got), f"{name}.{key} differs after resuming"
    for name in straight.wrapper.store.names:
        assert torch.equal(straight.wrapper.store[name], resumed.wrapper.store[name]), name
    same_rows(straight.history, resumed.history)


@pytest.mark.parametrize("algorithm", list(TINY))
def test_the_rollout_never_asks_the_host(algorithm, monkeypatch):
    """Every way a tensor's value reaches Python fails inside collect(): on a GPU each one
    would be a synchronisation."""
    trainer = tiny(algorithm)

    def refuse(*args, **kwargs):
        raise AssertionError("a value went to the host inside the rollout")

    for name in ("item", "tolist", "cpu", "__bool__", "__float__", "__int__", "__index__"):
        monkeypatch.setattr(torch.Tensor, name, refuse)
    buffer = trainer.rollout.collect()
    monkeypatch.undo()
    assert torch.isfinite(buffer.rewards).all()


def test_time_breakdown_adds_up():
    trainer = tiny("a2c")
    row = trainer.iterate(profile=True)
    phases = ["policy", "sampling", "env step", "training", "other"]
    assert all(row[f"time/{p}"] >= 0 for p in phases)
    assert all(row[f"time/{p}"] > 0 for p in phases[:4])
    assert sum(row[f"time/{p}"] for p in phases) == pytest.approx(row["time/total"])
    assert row["time/other"] < 0.5 * row["time/total"]
    assert "time/policy" not in trainer.iterate()  # timed only when asked


def test_metrics_per_policy_and_tags():
    trainer = tiny("a2c", "env.params.episode_length=8")
    row = trainer.iterate()
    for group in ("taggers", "runners"):
        for metric in ("return", "reward", "policy_loss", "value_loss", "entropy"):
            assert np.isfinite(row[f"{group}/{metric}"]), f"{group}/{metric}"
    assert row["episodes"] == 2 and row["episode_length"] == 8
    assert 0 <= row["tags_per_episode"] <= 5


def test_evaluation_records_frames_and_plays_a_random_baseline():
    trainer = tiny("a2c", "env.params.episode_length=12")
    result = trainer.evaluate(num_envs=3, record=True)
    assert result.metrics["episodes"] == 3
    assert result.frames["loc_x"].shape == (13, 7)
    baseline = trainer.evaluate(num_envs=3, random=("taggers",))
    assert np.isfinite(baseline.metrics["tags_per_episode"])
    with pytest.raises(TrainError, match="no such policy"):
        trainer.evaluate(random=("chasers",))


def test_non_contiguous_groups_train():
    trainer = tiny("a2c", "policies.taggers.agents=[0, 3]",
                   "policies.runners.agents=[1, 2, 4, 5, 6]")
    row = trainer.iterate()
    assert np.isfinite(row["taggers/policy_loss"])


def test_gaussian_ppo_on_pendulum():
    trainer = Trainer("pendulum", gpu=False, sets=[
        "algorithm.name=ppo", "env.num_envs=4", "trainer.steps=16", "algorithm.num_minibatches=2"])
    row = trainer.iterate()
    assert np.isfinite(row["pendulum/entropy"])
    assert trainer.rollout.buffer.actions.dtype == torch.float32


# -- bad input ----------------------------------------------------------------------------------


@pytest.mark.parametrize("sets, message", [
    (["trainer.lrr=1e-3"], "unknown key 'trainer.lrr'.*Did you mean 'trainer.lr'"),
    (["optimiser.lr=1"], "unknown key 'optimiser'"),
    (["trainer.iterations=many"], "trainer.iterations must be a whole number"),
    (["algorithm.name=sac"], "algorithm.name='sac': choose one of a2c, ppo, ddpg"),
    (["env.backend=cupy"], "env.backend='cupy'"),
    (["policies.cart.hidden=[]"], "hidden must list at least one"),
    (["env.params.mass_cart=-1"], "env.params: mass_cart must be positive"),
    (["env.params.mass=2"], "env.params: CartPoleConfig has no field .mass."),
])
def test_bad_configs_are_refused_with_the_key(sets, message):
    with pytest.raises(ConfigError, match=message):
        Trainer("cartpole", gpu=False, sets=sets)


@pytest.mark.parametrize("sets, message", [
    (["policies.taggers.agents=[0, 1, 2]"], "agent 2 is in both 'taggers' and 'runners'"),
    (["policies.taggers.agents=[0]"], "1 agent\\(s\\) belong to no policy \\(1\\)"),
    (["policies.runners.agents=2:9"], "names agent 7, but the environment has agents 0 to 6"),
    (["policies.runners=null"], "belong to no policy"),
])
def test_mismatched_policy_mapping(sets, message):
    with pytest.raises(ConfigError, match=message):
        Trainer("tag_continuous", gpu=False, sets=sets)


def test_roles_are_those_the_env_names():
    with pytest.raises(ConfigError, match="taggers.*CartPole names no roles"):
        Trainer("cartpole", gpu=False, sets=["policies.cart.agents=taggers"])


def test_batch_sizes_that_do_not_divide():
    with pytest.raises(ConfigError, match="num_minibatches=3 does not divide the 1,024 samples"):
        Trainer("cartpole", gpu=False, sets=["algorithm.num_minibatches=3"])
    with pytest.raises(ConfigError, match="replay_size=1,000 is not a multiple of the 64"):
        Trainer("pendulum", gpu=False, sets=["env.num_envs=8", "algorithm.replay_size=1000"])


def test_checkpoint_from_another_env(tmp_path):
    path = tiny("ppo").save(tmp_path / "cartpole.safetensors")
    with pytest.raises(TrainError, match="checkpoint of 'cartpole', but this trainer runs "
                                         "'pendulum'"):
        tiny("ddpg").load(path)
    with pytest.raises(TrainError, match="env's sizes differ"):
        Trainer("cartpole", gpu=False, sets=["env.num_envs=5"]).load(path)
    (tmp_path / "junk.safetensors").write_bytes(b"not a checkpoint")
    with pytest.raises(TrainError, match="junk.safetensors is not a readable checkpoint"):
        Trainer.from_checkpoint(tmp_path / "junk.safetensors")



def test_a_checkpoint_from_a_gpu_is_refused_on_the_cpu_with_what_to_do(tmp_path):
    """The sampling generator's state is the device's own kind (CUDA's Philox: 16 bytes; the
    CPU's Mersenne Twister: 5,056), so a run cannot go on, number for number, on the other."""
    trainer = tiny("ppo")
    state = trainer.state_dict()
    state["generator"] = torch.zeros(16, dtype=torch.uint8)  # what a GPU trainer saves
    before = trainer.state_dict()
    with pytest.raises(TrainError, match=r"was trained on a GPU and this trainer runs on the "
                                         r"CPU.*gpu=True.*load_trained"):
        trainer.load_state_dict(state, where="gpu.safetensors")
    assert torch.equal(trainer.state_dict()["generator"], before["generator"])
    trainer.load_state_dict(before)  # the CPU's own state still loads
    state["generator"] = torch.tensor(7, dtype=torch.uint8)  # damaged: no state of any device
    with pytest.raises(TrainError, match="generator is"):
        trainer.load_state_dict(state, where="damaged.safetensors")

# -- the command line ---------------------------------------------------------------------------


def test_cli_train_writes_metrics_curve_and_checkpoint(tmp_path, capsys):
    out = tmp_path / "run"
    code = main(["train", "cartpole", "--iterations", "2", "--envs", "4", "--out", str(out),
                 "--quiet", "--profile", "--set", "trainer.steps=16",
                 "--set", "algorithm.num_minibatches=2"])
    assert code == 0
    names = {p.name for p in out.iterdir()}
    assert {"config.yaml", "metrics.csv", "metrics.json", "learning_curve.png",
            "time_breakdown.png", "checkpoint.safetensors"} <= names
    history = json.loads((out / "metrics.json").read_text())["history"]
    assert [row["iteration"] for row in history] == [1, 2]
    assert len((out / "metrics.csv").read_text().splitlines()) == 3
    printed = capsys.readouterr().out
    assert "cart: mean episode return" in printed
    # the closing score is the saved policy's, played greedily on 100 fresh episodes
    score = re.search(r"100 fresh episodes, most probable actions: .*cart/return ([\d.]+)",
                      printed)
    again = Trainer.from_checkpoint(out / "checkpoint.safetensors").evaluate(num_envs=100)
    assert score and float(score.group(1)) == pytest.approx(again.metrics["cart/return"],
                                                            rel=1e-3)

    assert main(["train", "cartpole", "--resume", str(out / "checkpoint.safetensors"),
                 "--iterations", "1", "--out", str(out), "--quiet"]) == 0
    history = json.loads((out / "metrics.json").read_text())["history"]
    assert [row["iteration"] for row in history] == [1, 2, 3]


def test_cli_train_says_what_is_wrong(capsys):
    assert main(["train", "cartpole", "--set", "trainer.lrr=1"]) == 2
    assert "Did you mean 'trainer.lr'" in capsys.readouterr().err


def test_progress_bars_write_to_stdout_in_a_notebook_and_to_stderr_elsewhere():
    """Jupyter shows stderr on a pink background, which learners read as an error."""
    import sys

    from wd_teach.train.trainer import progress_stream

    assert progress_stream({"ipykernel": object()}) is sys.stdout
    assert progress_stream({}) is sys.stderr
