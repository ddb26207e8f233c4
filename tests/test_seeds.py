"""Several seeds of one run (wd_teach/train/seeds.py) and their interval estimates
(wd_teach/train/intervals.py): every result names its seed, a seed gives the same curve
each time and another seed another one, side by side (a process each) or one after another,
the IQM is the one worked out by hand and its interval holds it, and bad input is refused
before any training (before any process starts) with what to do."""

import os

import numpy as np
import pytest

from wd_teach.errors import TrainError
from wd_teach.train.intervals import Interval, iqm, iqm_curve, iqm_interval
from wd_teach.train.seeds import check_seeds, train_seeds

#: CartPole at its smallest: a few envs, short rollouts, one pass of two minibatches.
TINY = {"env": {"backend": "numpy", "num_envs": 4}, "trainer": {"steps": 16},
        "algorithm": {"num_minibatches": 2, "epochs": 1}}
#: The loss is finite every iteration (an episode's return is NaN until one ends).
METRIC = "cart/loss"


@pytest.fixture(scope="module")
def runs():
    return train_seeds("cartpole", [7, 3], 2, metric=METRIC, overrides=TINY,
                       score=lambda trainer: {"seed_seen": trainer.seed})


def test_every_result_names_its_seed(runs):
    assert runs.seeds == (7, 3) and runs.metric == METRIC
    assert runs.curves.shape == (2, 2) and list(runs.env_steps) == [64, 128]
    assert runs.score("seed_seen") == {7: 7.0, 3: 3.0}  # each trainer ran with its own seed
    assert set(runs.score("final")) == {7, 3}
    assert runs.score()[3] == pytest.approx(runs.curve(3).mean())  # last 3 of 2 iterations


def test_other_seeds_give_other_curves_and_a_seed_gives_the_same_one(runs):
    assert not np.array_equal(runs.curve(7), runs.curve(3))
    again = train_seeds("cartpole", [3], 2, metric=METRIC, overrides=TINY)
    np.testing.assert_array_equal(again.curve(3), runs.curve(3))


def greedy_return(trainer):
    """A score that plays: the trained policy's most probable actions on 4 fresh games."""
    return {"greedy": trainer.evaluate(num_envs=4).metrics["cart/return"],
            "iteration": trainer.iteration}


def test_seeds_side_by_side_are_the_runs_one_after_another_gives():
    """Each seed in a process of its own (what a GPU does by default) trains exactly the run
    it trains in this process, and a score (a lambda here, as a notebook's would be) scores
    the trained run: the trainer made again from the checkpoint its process wrote."""
    kinds = {way: train_seeds("cartpole", [7, 3], 2, metric="cart/return", overrides=TINY,
                              at_once=at_once, score=greedy_return)
             for way, at_once in (("alone", False), ("apart", True))}
    alone, apart = kinds["alone"], kinds["apart"]
    assert apart.at_once and not alone.at_once
    np.testing.assert_array_equal(apart.curves, alone.curves)
    np.testing.assert_array_equal(apart.env_steps, alone.env_steps)
    assert apart.score("greedy") == alone.score("greedy")
    assert apart.score("iteration") == {7: 2.0, 3: 2.0}
    without = train_seeds("cartpole", [7, 3], 2, metric="cart/return", overrides=TINY,
                          at_once=True)  # no score: no checkpoint, no trainer made again
    np.testing.assert_array_equal(without.curves, alone.curves)


def test_a_failure_in_a_seeds_process_comes_back_as_its_error():
    with pytest.raises(TrainError, match="'cart/retrun' is not in the history"):
        train_seeds("cartpole", [0, 1], 1, metric="cart/retrun", overrides=TINY, at_once=True)


def test_a_bad_config_is_refused_before_any_process_starts(monkeypatch):
    from wd_teach.errors import ConfigError
    from wd_teach.train import seeds as module

    monkeypatch.setattr(module, "_side_by_side", lambda runs, keep: pytest.fail("started"))
    with pytest.raises(ConfigError, match="num_envs"):
        train_seeds("cartpole", [0, 1], 1, metric=METRIC, at_once=True,
                    overrides={**TINY, "env": {"num_envs": -4}})


def test_what_a_seeds_process_writes_is_read_back_or_named(monkeypatch, tmp_path):
    """A seed's process reports in a JSON file: its curve, or its error (a TrainError's own
    words, anything else named with its type and what to do); no file at all is named too."""
    from wd_teach.train import seeds as module

    run = [("cartpole", 0, 1, METRIC, TINY)]
    monkeypatch.setattr(module, "train_one", lambda *run: 1 / 0)
    module._seed_main(0, run, str(tmp_path), False, None, None)
    with pytest.raises(TrainError, match=r"seed 4's run failed in its own process: "
                                         r"ZeroDivisionError: division by zero\. .*at_once"):
        module._result(tmp_path / "seed0", 4)
    monkeypatch.setattr(module, "train_one", lambda *run: (None, [1.5, float("nan")],
                                                            np.array([64, 128])))
    module._seed_main(0, run, str(tmp_path), False, None, None)
    curve, steps = module._result(tmp_path / "seed0", 0)
    assert curve[0] == 1.5 and np.isnan(curve[1]) and steps.tolist() == [64, 128]
    with pytest.raises(TrainError, match="seed 2's process wrote no result"):
        module._result(tmp_path / "seed2", 2)


@pytest.mark.parametrize("gpu, seat, alone", [(False, None, True), (True, None, False),
                                              (True, "4", True)])
def test_side_by_side_is_the_default_on_a_gpu_outside_a_rooms_seat(monkeypatch, gpu, seat,
                                                                   alone):
    from wd_teach.train import seeds as module

    monkeypatch.setattr(module, "gpu_available", lambda: gpu)
    monkeypatch.delenv("WD_TEACH_GPU_MEMORY_GB", raising=False)
    if seat:
        monkeypatch.setenv("WD_TEACH_GPU_MEMORY_GB", seat)
    chosen = []
    monkeypatch.setattr(module, "train_one", lambda *run, **_: chosen.append("alone") or
                        (None, [0.0], np.array([1])))
    monkeypatch.setattr(module, "_side_by_side", lambda runs, keep: chosen.append("at once") or
                        [(None, [0.0], np.array([1]))] * len(runs))
    train_seeds("cartpole", [0, 1], 1, metric=METRIC, overrides=TINY)
    assert chosen == (["alone", "alone"] if alone else ["at once"])


def test_a_seats_memory_limit_is_shared_out_among_its_seeds():
    """Whole MiB each, rounded down: the shares never add up to more than the seat's."""
    from wd_teach import seat_memory
    from wd_teach.train.seeds import seat_share

    gib = seat_memory.GIB
    assert seat_share(None, 5) is None
    for limit, processes, mib in ((4 * gib, 5, 819), (2 * gib, 3, 682), (gib, 1, 1024)):
        share = seat_share(limit, processes)
        read = seat_memory.limit_bytes({seat_memory.ENV_VAR: share})
        assert read == mib * 2**20 and processes * read <= limit
    with pytest.raises(TrainError, match="under 1 MiB each"):
        seat_share(2**20, 2)


def test_a_seeds_process_takes_its_share_and_the_floor_chosen_here(monkeypatch, tmp_path):
    """A process started for a seed is handed what the environment would not tell it: its
    share of a room seat's memory, and a floor chosen by set_fast in this process."""
    from wd_teach import floors
    from wd_teach.train import seeds as module

    monkeypatch.setenv("WD_TEACH_GPU_MEMORY_GB", "4")
    monkeypatch.setattr(floors, "_chosen", floors._chosen)  # put back after the test
    seen = {}

    def train_one(*run):
        seen.update(share=os.environ["WD_TEACH_GPU_MEMORY_GB"], fast=floors.fast_setting())
        return None, [0.0], np.array([16])

    monkeypatch.setattr(module, "train_one", train_one)
    module._seed_main(0, [("cartpole", 0, 1, METRIC, TINY)], str(tmp_path), False,
                      "0.7998046875", False)
    assert seen == {"share": "0.7998046875", "fast": False}


@pytest.mark.parametrize("seeds, words", [
    ([], "seeds is empty"), ([1, 2, 1], "seeds [1] are named more than once"),
    ([0, -1], "got -1"), ([0, 1.5], "got 1.5")])
def test_bad_seeds_are_refused_before_any_training(seeds, words):
    with pytest.raises(TrainError, match=words.replace("[", r"\[").replace("]", r"\]")):
        train_seeds("cartpole", seeds, 1, metric=METRIC, overrides=TINY)


def test_check_seeds_keeps_the_order():
    assert check_seeds(range(3)) == (0, 1, 2) and check_seeds([4, 2]) == (4, 2)


def test_a_metric_that_is_not_there_names_those_that_are():
    with pytest.raises(TrainError, match="'cart/retrun' is not in the history.*cart/return"):
        train_seeds("cartpole", [0], 1, metric="cart/retrun", overrides=TINY)


def test_a_seed_or_score_not_trained_is_a_clear_error(runs):
    with pytest.raises(TrainError, match=r"seed 5 was not trained; the seeds are \[7, 3\]"):
        runs.curve(5)
    with pytest.raises(TrainError, match="no score 'greedy'; these runs have final, seed_seen"):
        runs.score("greedy")


def test_the_iqm_is_the_mean_of_the_middle_half():
    # Eight scores, sorted 0 1 2 3 4 5 6 1000: two cut from each end, (2 + 3 + 4 + 5) / 4.
    assert iqm([5, 1000, 0, 3, 6, 2, 4, 1]) == pytest.approx(3.5)
    # Five: int(5 / 4) = 1 cut from each end, (2 + 3 + 4) / 3.
    assert iqm([100, 2, 4, 3, -50]) == pytest.approx(3.0)


def test_the_interval_holds_the_iqm_and_names_the_seeds():
    scores = {10: 5.0, 11: 1000.0, 12: 0.0, 13: 3.0, 14: 6.0, 15: 2.0, 16: 4.0, 17: 1.0}
    found = iqm_interval(scores)
    assert isinstance(found, Interval) and found.seeds == tuple(scores)
    assert found.iqm == pytest.approx(3.5)
    assert found.low <= found.iqm <= found.high and found.low < found.high
    assert found.low >= 0 and found.high <= 1000
    np.random.seed(1)
    assert iqm_interval(scores) == found  # seeded: the same scores, the same interval,
    assert np.random.random() == np.random.RandomState(1).random()  # NumPy's own draws as before
    assert str(found).startswith("IQM 3.5 (95% CI ") and "seeds 10, 11, 12" in str(found)
    same = iqm_interval({0: 2.0, 1: 2.0, 2: 2.0})
    assert (same.iqm, same.low, same.high) == (2.0, 2.0, 2.0)


def test_a_learning_curve_band_per_iteration():
    curves = np.array([[0.0, 1.0, np.nan], [2.0, 3.0, 1.0], [4.0, 5.0, 2.0]])
    middle, low, high = iqm_curve(curves, reps=200)
    np.testing.assert_allclose(middle[:2], [2.0, 3.0])
    assert (low[:2] <= middle[:2]).all() and (middle[:2] <= high[:2]).all()
    assert np.isnan([middle[2], low[2], high[2]]).all()  # seed 0 has no value there


@pytest.mark.parametrize("scores, words", [
    ({}, "at least two seeds, got 0"), ({0: 1.0}, "at least two seeds, got 1"),
    ([1.0, 2.0], "must be a mapping"), ({0: 1.0, 1: float("nan")}, r"seeds \[1\] have no")])
def test_bad_scores_are_refused(scores, words):
    with pytest.raises(TrainError, match=words):
        iqm_interval(scores)


def test_a_confidence_out_of_range_is_refused():
    with pytest.raises(TrainError, match="confidence must be in"):
        iqm_interval({0: 1.0, 1: 2.0}, confidence=95)


def test_an_rliable_that_cannot_import_is_named_with_what_to_install(monkeypatch):
    """arch 7 under pandas 3 fails inside rliable's import with a TypeError that names
    neither; the interval says which packages it found and what to install."""
    import builtins

    from wd_teach.errors import MissingPieceError
    from wd_teach.train import intervals

    real_import = builtins.__import__

    def broken(name, *args, **kwargs):
        fromlist = args[2] if len(args) > 2 else kwargs.get("fromlist")
        if name == "rliable" and "library" in (fromlist or ()):
            raise TypeError("deprecate_kwarg() missing 1 required positional argument: "
                            "'new_arg_name'")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", broken)
    with pytest.raises(MissingPieceError, match=r"TypeError: deprecate_kwarg.*pandas \S+.*"
                                                r"pip install 'rliable>=1.2,<1.3' 'pandas<3'"):
        intervals.iqm_interval({0: 1.0, 1: 2.0, 2: 3.0})


def test_an_intervals_verdict_claims_a_side_only_where_it_leaves_out_zero():
    from wd_teach.train.intervals import Interval

    def said(low, high):
        return Interval(0.0, low, high, (0, 1)).verdict("up", "down", "A and B")

    assert said(0.1, 2.0) == "up" and said(-2.0, -0.1) == "down"
    for low, high in ((-1.0, 1.0), (0.0, 1.0), (-1.0, 0.0)):
        assert said(low, high) == "the interval holds 0: these seeds cannot tell A and B apart"
