"""Auto-scaling on a pretend GPU: the fit, the secant steps, the halving after a run that
does not fit, the errors, and `wd-teach train --envs auto`. The memory probe is injected,
so every answer here is known exactly and a wrong search fails."""

import math

import pytest
import torch

import wd_teach
from wd_teach.cli import main as cli
from wd_teach.errors import BenchError, MissingPieceError, TooLargeError
from wd_teach.scale import autoscale
from wd_teach.scale.autoscale import envs_within, fit_num_envs, line_through, out_of_memory
from wd_teach.train.config import load_config

MIB, GIB = 2**20, 2**30
FREE = 10 * GIB


def linear(n):
    return 300 * MIB + 2 * MIB * n


def fit(measure, **kwargs):
    kwargs.setdefault("free_memory", lambda: FREE)
    return fit_num_envs("tag_continuous", measure=measure, gpu=False, **kwargs)


def test_a_straight_line_is_solved_at_once_and_checked_by_one_run():
    result = fit(linear)
    want = math.floor((0.8 * FREE - 300 * MIB) / (2 * MIB))
    assert result.num_envs == want
    assert [n for n, _ in result.measured] == [8, 32, want]  # the probes, then the answer
    assert result.bytes_per_env == pytest.approx(2 * MIB)
    assert result.base_bytes == pytest.approx(300 * MIB)
    assert result.budget_bytes == int(0.8 * FREE) and result.free_bytes == FREE
    config = load_config("tag_continuous", gpu=False)
    agents = config.env.params["num_taggers"] + config.env.params["num_runners"]
    assert result.batch_size == config.trainer.steps * want * agents
    assert f"{want:,} envs fit" in result.describe()


def test_the_fraction_sets_the_budget():
    assert fit(linear, fraction=0.5).num_envs == math.floor((0.5 * FREE - 300 * MIB) / (2 * MIB))


def test_a_bending_curve_is_followed_up_to_the_budget():
    """Activations stop growing past 100 envs (the update works in chunks): the line through
    the small probes is too steep, and the secant steps climb to the real answer."""
    def bends(n):
        return 300 * MIB + 20 * MIB * min(n, 100) + 1 * MIB * n

    result = fit(bends)
    best = max(n for n in range(1, 10**5) if bends(n) <= 0.8 * FREE)
    assert bends(result.num_envs) <= 0.8 * FREE
    assert result.num_envs >= 0.95 * best
    assert len(result.measured) > 3  # it did climb


def test_a_run_that_does_not_fit_is_halved_and_never_returned():
    limit = 1_000

    def tight(n):
        if n > limit:
            raise torch.cuda.OutOfMemoryError("CUDA out of memory. Tried to allocate 2.00 GiB")
        return linear(n)

    result = fit(tight)
    assert result.num_envs <= limit and result.num_envs >= 0.9 * limit
    failed = [n for n, peak in result.measured if peak is None]
    assert failed and all(n > limit for n in failed)
    first, second = failed[:2]
    assert second == (32 + first) // 2  # half way back to the largest size that fitted


def test_the_wrappers_own_size_check_counts_as_not_fitting():
    def wrapper_says_no(n):
        if n > 500:
            raise TooLargeError("501 envs of 110 agents need 90 GiB on the GPU, but only 79 "
                                "GiB is free")
        return linear(n)

    assert fit(wrapper_says_no).num_envs <= 500
    assert out_of_memory(RuntimeError("CUDA_ERROR_OUT_OF_MEMORY"))
    assert not out_of_memory(ValueError("a bug"))


def test_other_errors_from_a_run_are_not_swallowed():
    def broken(n):
        if n > 32:
            raise ValueError("a bug, not memory")
        return linear(n)

    with pytest.raises(ValueError, match="a bug"):
        fit(broken)


def test_max_envs_caps_the_answer():
    assert fit(linear, max_envs=100).num_envs == 100


@pytest.mark.parametrize("kwargs, words", [
    ({"fraction": 0}, "between 0 and 1"),
    ({"fraction": 1.5}, "between 0 and 1"),
    ({"fraction": "most"}, "between 0 and 1"),
    ({"probe_envs": (32, 8)}, "the smaller first"),
    ({"probe_envs": (0, 8)}, "the smaller first"),
    ({"max_envs": 10}, "at least the larger probe"),
])
def test_bad_arguments_are_refused(kwargs, words):
    with pytest.raises(BenchError, match=words):
        fit(linear, **kwargs)


def test_probes_that_do_not_fit_or_exceed_the_budget_say_so():
    def nothing_fits(n):
        raise torch.cuda.OutOfMemoryError("CUDA out of memory")

    with pytest.raises(BenchError, match="8 envs do not fit on this GPU"):
        fit(nothing_fits)
    with pytest.raises(BenchError, match="even 8 envs need"):
        fit(lambda n: 9 * GIB + n * MIB)


def test_small_runs_that_round_to_the_same_memory_are_grown_until_it_grows():
    """Tiny runs (CartPole under a seat's limit) can all fit in the allocator's first blocks:
    the search goes eight times bigger until memory grows, then follows the line."""
    def flat_then_linear(n):
        return 300 * MIB + (0 if n < 1000 else 2 * MIB * n)

    result = fit(flat_then_linear)
    assert any(p.reason == "grow" for p in result.probes)
    assert result.bytes_per_env == pytest.approx(2 * MIB)
    assert flat_then_linear(result.num_envs) <= result.budget_bytes


def test_memory_that_does_not_grow_cannot_be_fitted():
    with pytest.raises(BenchError, match="did not grow"):
        fit(lambda n: GIB)


def test_the_answer_suits_the_algorithms_batch_sizes():
    """PPO splits steps x envs samples into minibatches: 5 x envs must divide by 4."""
    result = fit_num_envs("cartpole", sets=["trainer.steps=5", "algorithm.num_minibatches=4"],
                          gpu=False, measure=linear, free_memory=lambda: FREE)
    assert result.num_envs % 4 == 0
    assert result.num_envs > math.floor((0.8 * FREE - 300 * MIB) / (2 * MIB)) - 4
    with pytest.raises(BenchError, match="do not suit"):
        fit_num_envs("cartpole", sets=["trainer.steps=5", "algorithm.num_minibatches=4"],
                     gpu=False, measure=linear, free_memory=lambda: FREE, probe_envs=(8, 30))


def test_line_and_solution():
    assert line_through({32: 160, 8: 100, 16: 116}) == (72, 2.75)  # the two largest sizes
    assert envs_within(100, 10, 5_000) == 490  # exactly at the budget fits
    assert envs_within(100, 10, 50) == 0


@pytest.mark.skipif(wd_teach.gpu_available(), reason="checks the CPU's refusal")
def test_without_a_gpu_it_says_why():
    with pytest.raises(MissingPieceError, match="measures GPU memory.*time, not memory"):
        fit_num_envs("tag_continuous")


@pytest.mark.skipif(wd_teach.gpu_available(), reason="checks the CPU's refusal")
def test_cli_envs_auto_without_a_gpu_says_why(capsys, tmp_path):
    assert cli(["train", "tag_continuous", "--envs", "auto", "--out", str(tmp_path)]) == 2
    assert "auto-scaling measures GPU memory" in capsys.readouterr().err


def test_cli_envs_auto_trains_at_the_fitted_size(monkeypatch, capsys, tmp_path):
    asked = {}

    def pretend(config, **kwargs):
        asked.update(config=config, **kwargs)
        return fit(linear, max_envs=40)

    monkeypatch.setattr(autoscale, "fit_num_envs", pretend)
    out = tmp_path / "run"
    assert cli(["train", "tag_continuous", "--envs", "auto", "--iterations", "1", "--quiet",
                "--backend", "numpy", "--set", "trainer.steps=2", "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "40 envs fit" in printed and "40 envs on numpy" in printed
    assert asked["config"] == "tag_continuous" and asked["sets"] == ["trainer.steps=2"]
    assert asked["overrides"]["env"]["backend"] == "numpy"
    assert "num_envs: 40" in (out / "config.yaml").read_text()


@pytest.mark.parametrize("value", ["0", "-3", "many"])
def test_cli_envs_takes_a_positive_number_or_auto(value, capsys):
    with pytest.raises(SystemExit):
        cli(["train", "tag_continuous", "--envs", value])
    assert "positive whole number or 'auto'" in capsys.readouterr().err


def test_every_run_is_recorded_with_why_it_had_its_size():
    """The search as it went: the probes, the line's answer, the halvings after a run that
    did not fit, each with the line it stood on, and the log says the same."""
    lines = []

    def tight(n):
        if n > 1_000:
            raise torch.cuda.OutOfMemoryError("CUDA out of memory")
        return linear(n)

    result = fit(tight, log=lines.append)
    probes = result.probes
    assert [p.reason for p in probes[:3]] == ["probe", "probe", "line"]
    assert all(p.line is None for p in probes[:2])
    assert probes[2].line == pytest.approx((300 * MIB, 2 * MIB))  # through 8 and 32 envs
    assert probes[2].num_envs == envs_within(300 * MIB, 2 * MIB, 0.8 * FREE)
    after_failures = [b for a, b in zip(probes, probes[1:], strict=False)
                      if a.peak_bytes is None]
    assert after_failures and all(p.reason == "back" for p in after_failures)
    assert result.measured == tuple((p.num_envs, p.peak_bytes) for p in probes)
    assert result.num_envs in [p.num_envs for p in probes if p.peak_bytes is not None]
    assert len(lines) == len(probes)
    assert all(f"{p.num_envs:,} envs ({autoscale.WHY[p.reason]})" in line
               for p, line in zip(probes, lines, strict=True))


def test_a_capped_search_says_the_cap_chose_its_size():
    assert [p.reason for p in fit(linear, max_envs=100).probes] == ["probe", "probe", "cap"]


def test_the_search_is_drawn_run_by_run():
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib import pyplot as plt

    from wd_teach.scale.bench_pictures import plot_search

    def tight(n):
        if n > 1_000:
            raise torch.cuda.OutOfMemoryError("CUDA out of memory")
        return linear(n)

    result = fit(tight)
    fig = plot_search(result, columns=3)
    panels = [ax for ax in fig.axes if ax.get_visible()]
    runs = result.probes[2:]  # one panel per run after the two probes
    assert len(panels) == len(runs)
    for ax, probe, number in zip(panels, runs, range(3, 3 + len(runs)), strict=True):
        assert ax.get_title().startswith(f"run {number}: {probe.num_envs:,} envs")
        marks = {line.get_label(): line for line in ax.lines}
        mark = marks["did not fit" if probe.peak_bytes is None else "this run"]
        assert list(mark.get_xdata()) == [probe.num_envs]
    answer = [line for line in panels[-1].lines if line.get_label().startswith("answer")]
    assert list(answer[0].get_xdata()) == [result.num_envs] * 2
    plt.close("all")
