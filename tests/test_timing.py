"""One clock for every measurement: wd_teach.timing's arithmetic, checked on a clock that
ticks once per mark, and the env's throughput, the benchmark rows, the sampler's table and
the training phases shown to read that very clock (each gives the numbers its ticks imply).
No test here decides anything on a real time."""

import itertools
from types import SimpleNamespace

import pytest
import torch

from wd_teach import timing
from wd_teach.env.wrapper import EnvWrapper, steps_per_second
from wd_teach.errors import BenchError
from wd_teach.sampler.bench import bench_sampler
from wd_teach.timing import Clock, time_calls
from wd_teach.train.metrics import PhaseTimer
from wd_teach_envs.cartpole import CartPole


@pytest.fixture
def ticks(monkeypatch):
    """The CPU clock replaced by one that reads 0, 1, 2, ... at each mark: a call then
    takes 1 second, and `calls` calls span 2 * calls - 1."""
    counter = itertools.count()
    monkeypatch.setattr(timing, "time", SimpleNamespace(perf_counter=lambda: float(next(counter))))


def test_time_calls_times_each_call_and_the_span(ticks):
    calls = []
    timed = time_calls(lambda: calls.append(1), 4, warmup=2)
    assert len(calls) == 6  # the warm-up runs, untimed
    assert timed.per_call == [1.0, 1.0, 1.0, 1.0] and timed.calls == 4
    assert timed.total == 7.0  # first start (0) to last end (7)


def test_a_clock_on_the_cpu_reads_perf_counter_and_waits_for_nothing(ticks):
    clock = Clock("cpu")
    assert not clock.cuda
    start, end = clock.mark(), clock.mark()
    clock.wait()
    assert clock.seconds(start, end) == 1.0


def test_a_clock_on_a_gpu_uses_cuda_events():
    assert Clock(torch.device("cuda", 0)).cuda  # building it needs no GPU
    if not torch.cuda.is_available():
        pytest.skip("recording a CUDA event needs a GPU; tests/gpu/test_timing_gpu.py does")
    assert isinstance(Clock("cuda").mark(), torch.cuda.Event)


@pytest.mark.parametrize("calls, warmup", [(0, 0), (-1, 0), (2, -1), (1.5, 0)])
def test_bad_counts_are_refused(calls, warmup):
    with pytest.raises(BenchError, match=r"time_calls needs calls >= 1 and warmup >= 0"):
        time_calls(lambda: None, calls, warmup)


def test_the_env_throughput_reads_the_shared_clock(ticks):
    wrapper = EnvWrapper(CartPole(), 3, "numpy", check_actions=False)
    assert steps_per_second(wrapper, 5, warmup=1) == 5 * 3 / 9.0


def test_the_sampler_table_reads_the_shared_clock(ticks, monkeypatch):
    import wd_teach.sampler.bench as sampler_bench

    monkeypatch.setattr(sampler_bench, "default_device", lambda: torch.device("cpu"))
    rows = bench_sampler(2, 3, 4, backends=[], repeats=3, warmup=1)
    assert rows and all(row.median_ms == 1000.0 for row in rows)


def test_the_benchmark_rows_read_the_shared_clock(ticks):
    from wd_teach.scale.bench import run_bench

    result = run_bench(["env", "rollout"], envs=[2], backends=["numpy"], iterations=2,
                       env="cartpole", sets=["trainer.steps=4"])
    assert [row["seconds"] for row in result["rows"]] == [3.0, 3.0]  # 2 calls: 0 to 3


def test_the_training_phases_read_the_shared_clock(ticks):
    timer = PhaseTimer(torch.device("cpu"), enabled=True)
    with timer("policy"):
        pass
    with timer("env step"):
        pass
    times = timer.pull()
    assert times["policy"] == 1.0 and times["env step"] == 1.0
    assert times["total"] == 3.0 and times["other"] == 1.0  # the gap between the two
