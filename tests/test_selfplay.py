"""Frozen groups, weights loaded from a checkpoint, and self-play against a pool of earlier
selves (wd_teach/train/selfplay.py), on the CPU's NumPy backend: by what the trainer does to
each group's weights, not by its settings."""

import math

import numpy as np
import pytest
import torch

from wd_teach.errors import ConfigError, TrainError
from wd_teach.train.trainer import Trainer

SMALL = ["env.num_envs=2", "trainer.steps=8"]


def tag(*sets):
    return Trainer("tag_grid", gpu=False, sets=[*SMALL, *sets])


def weights(policy):
    return [t.detach().clone() for t in policy.state_dict().values()]


def same(a, b):
    return all(torch.equal(x, y) for x, y in zip(a, b, strict=True))


def test_a_frozen_group_never_changes_while_the_other_learns():
    trainer = tag("policies.taggers.frozen=true")
    taggers, runners = weights(trainer.policies["taggers"]), weights(trainer.policies["runners"])
    trainer.train(3, progress=False)
    assert same(taggers, weights(trainer.policies["taggers"]))
    assert not same(runners, weights(trainer.policies["runners"]))
    assert not any(k.startswith("taggers/") and "loss" in k for k in trainer.history[-1])


def test_a_group_loads_its_weights_from_another_runs_checkpoint(tmp_path):
    first = tag()
    first.train(2, progress=False)
    path = first.save(tmp_path / "checkpoint.safetensors")
    second = tag(f"policies.runners.load={path}", "trainer.seed=5")
    assert same(weights(first.policies["runners"]), weights(second.policies["runners"]))
    assert not same(weights(first.policies["taggers"]), weights(second.policies["taggers"]))


def test_loading_refuses_what_does_not_fit(tmp_path):
    run = tag()
    path = run.save(tmp_path / "checkpoint.safetensors")
    with pytest.raises(TrainError, match="no checkpoint at"):
        tag(f"policies.runners.load={tmp_path / 'none.safetensors'}")
    with pytest.raises(TrainError, match="other sizes"):
        tag(f"policies.runners.load={path}", "policies.runners.hidden=[8]")
    other = Trainer("cartpole", gpu=False, sets=["env.num_envs=2", "trainer.steps=8"])
    cart = other.save(tmp_path / "cartpole.safetensors")
    with pytest.raises(TrainError, match="checkpoint of 'cartpole'"):
        tag(f"policies.runners.load={cart}")
    renamed = Trainer("tag_grid", gpu=False, sets=[
        *SMALL, "policies.runners=null", "policies.chasers.agents=runners"])
    with pytest.raises(TrainError, match="not 'chasers'"):
        Trainer("tag_grid", gpu=False, sets=[
            *SMALL, "policies.runners=null", "policies.chasers.agents=runners",
            f"policies.chasers.load={path}"])
    assert renamed.groups[1].name == "chasers"


@pytest.mark.parametrize("sets, message", [
    (["policies.runners.frozen=true", "policies.runners.pool=2"], "frozen and pool"),
    (["policies.runners.pool_play=1.5"], "pool_play is a probability"),
    (["policies.runners.pool=-1"], "pool must be a whole number"),
    (["policies.runners.pool_every=0"], "pool_every must be"),
])
def test_bad_selfplay_settings_are_refused(sets, message):
    with pytest.raises(ConfigError, match=message):
        tag(*sets)


def test_a_rollout_played_by_a_snapshot_uses_its_weights_and_skips_the_groups_update():
    trainer = tag("policies.runners.pool=1", "policies.runners.pool_play=1.0")
    runners = trainer.policies["runners"]
    start = weights(runners)
    trainer.train(1, progress=False)  # no snapshot yet: the runners play and learn as themselves
    assert trainer.history[0]["runners/played_snapshot"] == 0.0
    learned = weights(runners)
    assert not same(start, learned)

    # Put a known snapshot in the pool: the starting weights.
    pool = trainer.pools["runners"]
    pool.snapshots = [[t.clone() for t in start]]
    trainer.iterate()
    row = trainer.history[-1]
    assert row["runners/played_snapshot"] == 1.0
    assert same(learned, weights(runners)), "the current weights are back, and not updated"
    assert all(math.isnan(v) for k, v in row.items() if k.startswith("runners/loss"))
    assert not math.isnan(row["taggers/loss"]), "the other group learned from the rollout"

    # The rollout's values for the runners are the starting weights' critic's, not the current.
    buffer, group = trainer.rollout.buffer, trainer.groups[1]
    obs = group.take(buffer.obs[0], 1)
    played = group.take(buffer.values[0], 1)
    with torch.no_grad():
        runners.load_state_dict(dict(zip(runners.state_dict(), start, strict=True)))
        _, then = runners.actor_and_value(obs)
        runners.load_state_dict(dict(zip(runners.state_dict(), learned, strict=True)))
        _, now = runners.actor_and_value(obs)
    torch.testing.assert_close(played, then)
    assert not torch.allclose(played, now)


def test_the_pool_keeps_its_newest_snapshots_every_so_many_iterations():
    trainer = tag("policies.runners.pool=2", "policies.runners.pool_every=2",
                  "policies.runners.pool_play=0.0")
    kept = []
    for _ in range(6):
        trainer.iterate()
        if trainer.iteration % 2 == 0:
            kept.append(weights(trainer.policies["runners"]))
    snapshots = trainer.pools["runners"].snapshots
    assert len(snapshots) == 2
    assert same(snapshots[0], kept[-2]) and same(snapshots[1], kept[-1])
    assert all(row["runners/played_snapshot"] == 0.0 for row in trainer.history)


def test_self_play_is_seeded_and_resumes_bit_for_bit(tmp_path):
    sets = ["policies.runners.pool=3", "policies.runners.pool_every=1",
            "policies.runners.pool_play=0.5"]
    straight = tag(*sets)
    straight.train(6, progress=False)
    played = [row["runners/played_snapshot"] for row in straight.history]
    assert 0.0 in played[1:] and 1.0 in played[1:], played  # a mixture, seeded

    first = tag(*sets)
    first.train(3, progress=False)
    resumed = Trainer.from_checkpoint(first.save(tmp_path / "c.safetensors"), gpu=False)
    assert len(resumed.pools["runners"].snapshots) == len(first.pools["runners"].snapshots)
    resumed.train(3, progress=False)
    assert [row["runners/played_snapshot"] for row in resumed.history] == played
    for name, policy in straight.policies.items():
        assert same(weights(policy), weights(resumed.policies[name])), name
    np.testing.assert_array_equal(
        [row["taggers/return"] for row in straight.history],
        [row["taggers/return"] for row in resumed.history])


def test_the_selfplay_bench_scores_both_kinds_over_the_same_seeds(tmp_path, bench_script):
    """bench/selfplay.py at toy size: both kinds over the seeds, cross-played against one
    panel, an interval per kind and for the per-seed differences, all in its JSON."""
    import json

    bench = bench_script("selfplay")
    out = tmp_path / "selfplay.json"
    bench.main([str(out), "--seeds", "2", "--iterations", "3", "--envs", "2",
                "--eval-envs", "2", "--pool", "2", "--pool-every", "1"])
    result = json.loads(out.read_text())
    assert result["seeds"] == [0, 1] and result["pool"] == 2
    from wd_teach.scale.selfplay_results import load_selfplay, selfplay_table

    assert load_selfplay(out) == result  # in the format lesson 11 reads
    assert "pool - current" in selfplay_table(result)
    rows = {(r["measure"], r["kind"]): r for r in result["rows"]}
    for measure in ("panel", "random runners"):
        pool, current = rows[measure, "pool"], rows[measure, "current"]
        difference = rows[measure, "pool - current"]
        for row in (pool, current, difference):
            assert row["low"] <= row["iqm"] <= row["high"]
            assert sorted(row["per_seed"]) == ["0", "1"]
        for seed in ("0", "1"):
            assert difference["per_seed"][seed] == pytest.approx(
                pool["per_seed"][seed] - current["per_seed"][seed])
        assert difference["verdict"]


def test_each_play_puts_back_the_weights_of_that_moment():
    """The current weights wait in one buffer, reused from play to play: after each rollout
    a snapshot played, the weights of that moment come back, not an earlier play's."""
    from wd_teach.train.selfplay import SnapshotPool

    policy = torch.nn.Linear(3, 2)
    pool = SnapshotPool(policy, size=2, every=1, play_share=1.0, seed=0)
    pool.after_iteration(1)
    for _ in range(3):
        with torch.no_grad():
            policy.weight.add_(1.0)  # an update since the last rollout
        now = [t.clone() for t in policy.state_dict().values()]
        assert pool.play()
        assert not torch.equal(policy.weight, now[0])  # the snapshot is in place
        pool.restore()
        assert all(torch.equal(a, b) for a, b in zip(policy.state_dict().values(), now,
                                                      strict=True))
