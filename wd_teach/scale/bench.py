"""Throughput against the number of environments and of agents: how far one GPU scales.

Four measurements, each a function that gives one `Row` (one size, one backend):

    env      EnvWrapper.step with random actions: the env's kernels (or NumPy) alone
    sampler  one draw for every agent (wd_teach.sampler.bench); torch.multinomial beside it
    rollout  Trainer.rollout.collect(): policy, sampling, env step and resets, `steps` times
    train    Trainer.iterate(): a rollout and the update, end to end

`run_bench` sweeps them over numbers of envs, numbers of agents and backends, and can add
the same config on the CPU (the NumPy env, torch on the CPU) as the baseline, so that the
GPU/CPU ratio comes from one run on one machine. It returns a plain dict, ready for JSON,
with the GPU's name, the driver and the versions of what ran; `format_table` prints it.
The CLI (`wd-teach bench`), bench/throughput.py, notebook 09 and the tests all call it.

Timing (wd_teach.timing, CUDA events on a GPU, perf_counter on the CPU): a warm-up first
(kernels compile, torch's allocator settles, CUDA graphs are recorded on the second call),
then `calls` calls, from the first one's start to the last one's end, the gaps between them
included: what a user waits for, Python included. The sampler rows are the median of the
calls' own times (wd_teach.sampler.bench). A train row also profiles one more iteration
(`iterate(profile=True)`): where the time goes. That iteration runs step by step, without
the CUDA graphs, so its total is longer than a timed iteration; its shares are what count.
A benchmark reports; it never decides pass or fail on a time.

Sizes of a game: the env says how to make a game of `num_agents` agents
(`Env.params_for_agents`: the default game, lesson_sizes().bench_env, makes 110 agents its
10 chasers and 100 chased). An env with a fixed number of agents is
measured at that number. Every other setting comes from the env's training config, so the
env, rollout and train rows run the very game that `wd-teach train` trains.
"""

from __future__ import annotations

import datetime
import json
import os
import platform
import subprocess
from collections.abc import Callable, Sequence
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from pathlib import Path

import torch

from wd_teach import backends as backend_list
from wd_teach.backends import ALL as ENV_BACKENDS
from wd_teach.device import discover, gpu_available
from wd_teach.errors import BenchError, EnvError
from wd_teach.floors import fast_floor
from wd_teach.lessons.sizes import lesson_sizes
from wd_teach.scale.autoscale import out_of_memory, release_gpu_memory
from wd_teach.timing import time_calls
from wd_teach.train.config import TrainConfig, load_config, make_env

#: What can be measured, in the order `all` runs them.
WHATS = ("env", "sampler", "rollout", "train")
#: The sampler's reference row: torch's own draw, on the same probabilities.
MULTINOMIAL = "torch.multinomial"
#: The CPU baseline's backend: the one that steps an env's NumPy reference, no kernels.
BASELINE = backend_list.reference()
#: The JSON's format, so that a reader can tell what it holds.
FORMAT = "wd-teach-bench/1"
#: Timed calls and warm-up calls of each measurement: on a GPU, and on the CPU (the NumPy
#: baseline, or everything on a machine without a GPU, where Numba runs on the simulator).
CALLS = {"gpu": {"env": 100, "sampler": 50, "rollout": 5, "train": 10},
         "cpu": {"env": 3, "sampler": 3, "rollout": 2, "train": 2}}
WARMUP = {"gpu": {"env": 5, "sampler": 5, "rollout": 3, "train": 3},
          "cpu": {"env": 1, "sampler": 1, "rollout": 1, "train": 1}}
SIMULATED = "CUDA simulator: Python threads, not a speed"


@dataclass
class Row:
    """One measurement: `calls` calls that advanced `env_steps` env steps in `seconds`."""

    what: str
    backend: str
    device: str  # where it ran: "cuda" or "cpu"
    num_envs: int
    num_agents: int
    calls: int
    seconds: float | None  # None: it did not run (see `error`)
    env_steps: int
    baseline: bool = False  # the CPU baseline that GPU rows are compared with
    breakdown: dict[str, float] | None = None  # train: seconds per phase of one iteration
    peak_memory_bytes: int | None = None  # on a GPU: the most torch's allocator held
    note: str = ""
    error: str = ""

    @property
    def ok(self) -> bool:
        return self.seconds is not None and self.seconds > 0

    @property
    def env_steps_per_second(self) -> float | None:
        return self.env_steps / self.seconds if self.ok else None

    @property
    def agent_steps_per_second(self) -> float | None:
        rate = self.env_steps_per_second
        return None if rate is None else rate * self.num_agents

    @property
    def ms_per_call(self) -> float | None:
        return 1e3 * self.seconds / self.calls if self.ok else None

    def as_dict(self) -> dict:
        return {**asdict(self), "env_steps_per_second": self.env_steps_per_second,
                "agent_steps_per_second": self.agent_steps_per_second,
                "ms_per_call": self.ms_per_call}


@dataclass(frozen=True)
class Job:
    """One row to measure: what, on which backend, at which size, how many calls."""

    what: str
    backend: str
    num_envs: int
    num_agents: int
    calls: int
    warmup: int
    baseline: bool = False


@dataclass
class Plan:
    """Every job of a run, checked before any of them starts, and the config they share."""

    config: TrainConfig
    gpu: bool
    jobs: list[Job] = field(default_factory=list)
    sets: tuple[str, ...] = ()

    def describe(self) -> dict:
        """The plan as the JSON's `config`: what was asked, and the training config."""
        by_what = {}
        for what in dict.fromkeys(job.what for job in self.jobs):
            jobs = [j for j in self.jobs if j.what == what and not j.baseline]
            by_what[what] = {"envs": sorted({j.num_envs for j in jobs}),
                             "agents": sorted({j.num_agents for j in jobs}),
                             "backends": list(dict.fromkeys(j.backend for j in jobs)),
                             "calls": max((j.calls for j in jobs), default=0)}
        baseline = [j for j in self.jobs if j.baseline]
        return {"env": self.config.env.name, "sets": list(self.sets), "measurements": by_what,
                "cpu_baseline": {"envs": sorted({j.num_envs for j in baseline}),
                                 "calls": {j.what: j.calls for j in baseline},
                                 "threads": cpu_threads()}
                if baseline else None,
                "train_config": self.config.to_dict()}


# -- the four measurements ------------------------------------------------------------------


def sized_config(config: TrainConfig, num_envs: int, num_agents: int, backend: str,
                 gpu: bool) -> TrainConfig:
    """`config` at num_envs envs of num_agents agents, on `backend`."""
    try:
        params = make_env(config.env).params_for_agents(num_agents)
    except EnvError as err:
        raise BenchError(f"{config.env.name}: {err}") from err
    return load_config(config, overrides={"env": {"num_envs": num_envs, "backend": backend,
                                                  "params": params}}, gpu=gpu)


def bench_env(config: TrainConfig, job: Job) -> Row:
    """Env steps per second of the env alone, stepped with one set of random actions."""
    from wd_teach.env.wrapper import EnvWrapper, steps_per_second

    wrapper = EnvWrapper(make_env(config.env), job.num_envs, job.backend, check_actions=False)
    rate = steps_per_second(wrapper, job.calls, warmup=job.warmup)
    env_steps = job.calls * job.num_envs
    return _row(job, wrapper.device, env_steps / rate, env_steps)


def bench_sampling(job: Job) -> Row:
    """One draw for every agent over the lesson's number of actions: a backend's `sample()`
    (the probabilities already in the store), or torch.multinomial on the same numbers."""
    from wd_teach.sampler.bench import bench_sampler as time_sampler

    name = MULTINOMIAL if job.backend == MULTINOMIAL else f"wd_teach {job.backend}: sample()"
    timings = time_sampler(job.num_envs, job.num_agents, lesson_sizes().num_actions,
                           backends=[] if job.backend == MULTINOMIAL else [job.backend],
                           repeats=job.calls, warmup=job.warmup)
    median_ms = next(t.median_ms for t in timings if t.name == name)
    device = torch.device("cuda" if gpu_available() else "cpu")
    return _row(job, device, median_ms / 1e3 * job.calls, job.calls * job.num_envs)


def bench_rollout(config: TrainConfig, job: Job, gpu: bool) -> Row:
    """Rollouts alone: `steps` steps of policy, sampling, env step and resets."""
    from wd_teach.train.trainer import Trainer

    _reset_peak_memory()
    trainer = Trainer(config, gpu=gpu)
    seconds = time_calls(trainer.rollout.collect, job.calls, job.warmup, trainer.device).total
    return _row(job, trainer.device, seconds, job.calls * trainer.steps_per_iteration,
                peak=_peak_memory(trainer.device))


def bench_train(config: TrainConfig, job: Job, gpu: bool) -> Row:
    """Whole iterations, rollout and update, end to end; then one profiled iteration."""
    from wd_teach.train.trainer import Trainer

    _reset_peak_memory()
    trainer = Trainer(config, gpu=gpu)
    seconds = time_calls(trainer.iterate, job.calls, job.warmup, trainer.device).total
    peak = _peak_memory(trainer.device)
    profiled = trainer.iterate(profile=True)
    breakdown = {key.removeprefix("time/"): value for key, value in profiled.items()
                 if key.startswith("time/")}
    return _row(job, trainer.device, seconds, job.calls * trainer.steps_per_iteration,
                peak=peak, breakdown=breakdown)


def _row(job: Job, device: torch.device, seconds: float, env_steps: int, *,
         peak: int | None = None, breakdown: dict | None = None) -> Row:
    simulated = job.backend in backend_list.kernel_backends() and device.type != "cuda"
    return Row(job.what, job.backend, device.type, job.num_envs, job.num_agents, job.calls,
               seconds, env_steps, baseline=job.baseline, breakdown=breakdown,
               peak_memory_bytes=peak, note=SIMULATED if simulated else "")


def _reset_peak_memory() -> None:
    if torch.cuda.is_available():
        release_gpu_memory()
        torch.cuda.reset_peak_memory_stats()


def _peak_memory(device: torch.device) -> int | None:
    return torch.cuda.max_memory_allocated() if device.type == "cuda" else None


# -- planning: every input checked before any GPU work ---------------------------------------


def make_plan(what: str | Sequence[str] = "all", *, envs: Sequence[int] | None = None,
              agents: Sequence[int] | None = None, backends: Sequence[str] | None = None,
              iterations: int | None = None, cpu_baseline: bool = False,
              cpu_envs: Sequence[int] | None = None, cpu_iterations: int | None = None,
              env: str | None = None, sets: Sequence[str] = ()) -> Plan:
    """The jobs of a run (see `run_bench` for the arguments), every input checked."""
    whats = _whats(what)
    envs = _counts(envs, "envs")
    agents = _counts(agents, "agents")
    backends = _backends(backends)
    iterations = _count(iterations, "iterations")
    cpu_iterations = _count(cpu_iterations, "cpu_iterations")
    cpu_envs = _counts(cpu_envs, "cpu_envs")
    gpu = gpu_available()
    config = load_config(env or lesson_sizes(gpu).bench_env, sets=sets, gpu=gpu)
    plan = Plan(config, gpu, sets=tuple(sets))
    for each in whats:
        each_envs, each_agents = _sizes(each, envs, agents, config, gpu)
        plan.jobs += _jobs(each, each_envs, each_agents,
                           backends or _default_backends(each, gpu), iterations, gpu)
        if cpu_baseline and each != "sampler":
            _add_baseline(plan, each, cpu_envs or (min(each_envs),), each_agents,
                          cpu_iterations or CALLS["cpu"][each])
    for job in plan.jobs:  # the host's checks of each size's config, before any GPU work
        sized_config(config, job.num_envs, job.num_agents, _env_backend(job), gpu)
    return plan


def _sizes(what: str, envs, agents, config: TrainConfig, gpu: bool):
    """The envs and agents of a measurement: those asked for, else the lesson's sweep for
    the env and the sampler (at the env's own number of agents if it has a fixed one), and
    the config's own game for rollouts and training."""
    sizes = lesson_sizes(gpu)
    env = make_env(config.env)
    if what in ("rollout", "train"):
        return envs or sizes.bench_train_envs, agents or (env.num_agents,)
    return envs or sizes.bench_envs, agents or (sizes.bench_agents if _scales(env)
                                                else (env.num_agents,))


def _scales(env) -> bool:
    """Whether the env can make games of other numbers of agents."""
    try:
        env.params_for_agents(env.num_agents + 1)
    except EnvError:
        return False
    return True


def _jobs(what: str, envs, agents, backends, iterations: int | None, gpu: bool) -> list[Job]:
    """One job per backend and size; the sampler's torch.multinomial row beside its own."""
    if what == "sampler":  # it has no NumPy backend; torch.multinomial is its reference
        backends = [b for b in backends if b in backend_list.kernel_backends()] + [MULTINOMIAL]
    jobs = []
    for backend in backends:
        on = "cpu" if _on_cpu(backend, gpu) else "gpu"
        jobs += [Job(what, backend, num_envs, num_agents, iterations or CALLS[on][what],
                     WARMUP[on][what]) for num_envs in envs for num_agents in agents]
    return jobs


def _on_cpu(backend: str, gpu: bool) -> bool:
    """Whether a job runs on the CPU: every job off a GPU; on a GPU, one whose backend keeps
    its arrays on the CPU (NumPy). The sampler's torch row runs on the GPU."""
    return not gpu or (backend != MULTINOMIAL
                       and backend_list.find(backend).device().type == "cpu")


def _add_baseline(plan: Plan, what: str, envs, agents, calls: int) -> None:
    """The NumPy env and torch on the CPU at these sizes, unless the plan has them."""
    for num_envs in envs:
        for num_agents in agents:
            same = [j for j in plan.jobs if (j.what, j.backend, j.num_envs, j.num_agents)
                    == (what, BASELINE, num_envs, num_agents)]
            if not same:
                plan.jobs.append(Job(what, BASELINE, num_envs, num_agents, calls,
                                     WARMUP["cpu"][what], baseline=True))


def _env_backend(job: Job) -> str | None:
    """The env backend of a job's config (the sampler's torch row has none of its own)."""
    return None if job.backend == MULTINOMIAL else job.backend


def _default_backends(what: str, gpu: bool) -> tuple[str, ...]:
    """On a GPU every kernel backend that runs here. On a CPU: the env on the simulator and
    NumPy; the sampler on the simulator; rollouts and training on NumPy (on the simulator
    every CUDA thread is a Python thread: seconds per step)."""
    kernels = discover().backends
    if gpu:
        return kernels
    return {"env": (*kernels, BASELINE), "sampler": kernels}.get(what, (BASELINE,))


def _whats(what) -> tuple[str, ...]:
    names = [what] if isinstance(what, str) else list(what)
    if names == ["all"]:
        return WHATS
    unknown = [n for n in names if n not in WHATS]
    if unknown or not names:
        raise BenchError(f"unknown measurement {', '.join(map(repr, unknown)) or '(none)'}: "
                         f"choose from {', '.join(WHATS)}, or all.")
    return tuple(dict.fromkeys(names))


def _count(value, name: str, minimum: int = 1) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise BenchError(f"{name} must be a whole number of at least {minimum}, got {value!r}.")
    return value


def _counts(values, name: str, minimum: int = 1) -> tuple[int, ...] | None:
    if values is None:
        return None
    values = tuple(values)
    if not values:
        raise BenchError(f"{name} is empty: give at least one number, e.g. 1,10,100.")
    for value in values:
        if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
            raise BenchError(f"{name} must be whole numbers of at least {minimum}; got "
                             f"{value!r}.")
    return values


def _backends(backends) -> tuple[str, ...] | None:
    """Known names, and the kernel backends runnable here (else the doctor's reason)."""
    if backends is None:
        return None
    backends = tuple(backends)
    for backend in backends:
        if backend not in ENV_BACKENDS:
            raise BenchError(f"unknown backend {backend!r}: choose from "
                             f"{', '.join(ENV_BACKENDS)}.")
        backend_list.get(backend)  # raises, saying why, where it cannot run
    return backends


def parse_counts(text: str, name: str = "envs") -> tuple[int, ...]:
    """'1,10,100' (or '10_000') as (1, 10, 100); a clear error for anything else."""
    try:
        return tuple(int(part) for part in text.split(","))
    except ValueError:
        raise BenchError(f"--{name} takes whole numbers separated by commas, e.g. 1,10,100; "
                         f"got {text!r}.") from None


# -- running, and what it gives --------------------------------------------------------------


def run_bench(what: str | Sequence[str] = "all", *, envs: Sequence[int] | None = None,
              agents: Sequence[int] | None = None, backends: Sequence[str] | None = None,
              iterations: int | None = None, cpu_baseline: bool = False,
              cpu_envs: Sequence[int] | None = None, cpu_iterations: int | None = None,
              env: str | None = None, sets: Sequence[str] = (),
              log: Callable[[str], object] | None = None,
              out: str | Path | None = None) -> dict:
    """Measure `what` ("env", "sampler", "rollout", "train", a list of them, or "all") at
    every size in `envs` x `agents` on every backend in `backends` (defaults: this machine's
    lesson sizes and backends), `iterations` timed calls each (default: CALLS).
    `cpu_baseline`: also the NumPy env and torch on the CPU, at `cpu_envs` (default: the
    smallest of `envs`), `cpu_iterations` calls. `sets`: changes to the env's training
    config ('trainer.steps=50'). `log(line)` after each row. `out`: a JSON file, written
    again after every row, so that a run cut short keeps what it measured. Returns the
    results as a dict (see `results`); a row that ran out of memory says so in `error`.
    """
    plan = make_plan(what, envs=envs, agents=agents, backends=backends, iterations=iterations,
                     cpu_baseline=cpu_baseline, cpu_envs=cpu_envs,
                     cpu_iterations=cpu_iterations, env=env, sets=sets)
    rows = []
    for job in plan.jobs:
        rows.append(run_job(plan, job))
        if log is not None:
            log(_row_line(rows[-1]))
        if out is not None:
            write_results(results(plan, rows), out)
    return results(plan, rows)


def cpu_threads() -> int:
    """Threads torch may use for a CPU row: WD_TEACH_CPU_THREADS, else half the cores (at
    most 8). Bounded, so that two workshop seats timing a CPU baseline on one machine do not
    each claim every core and slow both to a crawl."""
    setting = os.environ.get("WD_TEACH_CPU_THREADS")
    if setting is not None:
        if not setting.isdigit() or int(setting) < 1:
            raise BenchError(f"WD_TEACH_CPU_THREADS={setting!r}: give a whole number of "
                             "threads, at least 1.")
        return int(setting)
    return max(1, min(8, (os.cpu_count() or 2) // 2))


@contextmanager
def bounded_cpu_threads(enabled: bool):
    """torch's CPU threads held to `cpu_threads()` inside the block, when `enabled`."""
    before = torch.get_num_threads()
    if enabled:
        torch.set_num_threads(min(before, cpu_threads()))
    try:
        yield
    finally:
        torch.set_num_threads(before)


def run_job(plan: Plan, job: Job) -> Row:
    """The row of one job; a job that runs out of GPU memory gives a row that says so.
    A CPU row (the NumPy env, torch on the CPU) runs on a bounded number of threads."""
    config = sized_config(plan.config, job.num_envs, job.num_agents, _env_backend(job),
                          plan.gpu)
    on_cpu = _on_cpu(job.backend, plan.gpu)
    try:
        with bounded_cpu_threads(on_cpu):
            return _run_job(config, plan, job)
    except Exception as err:
        if not out_of_memory(err):
            raise
        on = "cpu" if on_cpu else "cuda"
        return Row(job.what, job.backend, on, job.num_envs, job.num_agents, job.calls, None, 0,
                   baseline=job.baseline, error=f"out of memory: {str(err)[:200]}")
    finally:
        release_gpu_memory()


def _run_job(config: TrainConfig, plan: Plan, job: Job) -> Row:
    if job.what == "env":
        return bench_env(config, job)
    if job.what == "sampler":
        return bench_sampling(job)
    if job.what == "rollout":
        return bench_rollout(config, job, plan.gpu)
    return bench_train(config, job, plan.gpu)


def results(plan: Plan, rows: Sequence[Row]) -> dict:
    """Everything a reader needs to trust and redo the numbers, as a plain dict. `floor`:
    which code ran, "fast" (wd_teach/fast/ and the envs' twins, the default on a GPU) or
    "plain" (the lessons' own; WD_TEACH_FAST=0)."""
    return {"format": FORMAT,
            "created": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
            "device": machine(), "versions": versions(), "config": plan.describe(),
            "floor": "fast" if fast_floor("cuda" if plan.gpu else "cpu") else "plain",
            "rows": [row.as_dict() for row in rows], "ratios": ratios(rows)}


def is_baseline(row: Row) -> bool:
    """Whether `row` is the CPU baseline: the reference backend (no kernels) on the CPU."""
    return row.device == "cpu" and row.backend == BASELINE


def ratios(rows: Sequence[Row]) -> list[dict]:
    """Each row's env steps per second over the CPU baseline's at the same measurement and
    size (the NumPy env, torch on the CPU): on a GPU, the GPU/CPU ratio."""
    base = {(r.what, r.num_envs, r.num_agents): r for r in rows
            if r.ok and is_baseline(r)}
    found = []
    for row in rows:
        cpu = base.get((row.what, row.num_envs, row.num_agents))
        if cpu is None or not row.ok or is_baseline(row):
            continue
        found.append({"what": row.what, "backend": row.backend, "device": row.device,
                      "num_envs": row.num_envs, "num_agents": row.num_agents,
                      "env_steps_per_second": row.env_steps_per_second,
                      "cpu_env_steps_per_second": cpu.env_steps_per_second,
                      "ratio": row.env_steps_per_second / cpu.env_steps_per_second})
    return found


def machine() -> dict:
    """The device the numbers come from: the GPU's name and driver, or "cpu"."""
    report = discover()
    cpu = {"cpu": platform.processor() or platform.machine(), "cpu_cores": os.cpu_count()}
    if not report.has_gpu:
        return {"name": "cpu", "kind": "cpu", "driver": None, "driver_cuda": None,
                "compute_capability": None, "multiprocessors": None, "memory_gib": None,
                "gpus": 0, **cpu}
    props = torch.cuda.get_device_properties(torch.cuda.current_device())
    driver_cuda = report.driver_cuda
    return {"name": report.gpu_name, "kind": "cuda", "driver": _driver_version(),
            "driver_cuda": f"{driver_cuda[0]}.{driver_cuda[1]}" if driver_cuda else None,
            "compute_capability": "{}.{}".format(*report.compute_capability),
            "multiprocessors": props.multi_processor_count,
            "memory_gib": round(props.total_memory / 2**30, 2),
            "gpus": torch.cuda.device_count(), **cpu}


def versions() -> dict:
    """What ran: Python, torch (and its CUDA), numpy, numba, numba-cuda, PyCUDA, wd_teach."""
    import numba
    import numpy

    import wd_teach

    report = discover()
    return {"python": platform.python_version(), "torch": torch.__version__,
            "torch_cuda": torch.version.cuda, "numpy": numpy.__version__,
            "numba": numba.__version__, "numba_cuda": report.numba_cuda,
            "pycuda": report.pycuda, "wd_teach": wd_teach.__version__}


def _driver_version() -> str | None:
    """The NVIDIA driver's version, as nvidia-smi says it (None where it cannot)."""
    try:
        done = subprocess.run(["nvidia-smi", "--query-gpu=driver_version",
                               "--format=csv,noheader"], capture_output=True, text=True,
                              timeout=20)
    except (OSError, subprocess.TimeoutExpired):
        return None
    lines = done.stdout.split()
    return lines[0] if done.returncode == 0 and lines else None


def write_results(results: dict, path: str | Path) -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(results, indent=1) + "\n")
    return path


def read_json(path: str | Path, what: str, make: str) -> object:
    """The JSON in `path`; a missing file, or one that is not JSON, is a BenchError that says
    `what` it should hold and the command that `make`s it."""
    path = Path(path)
    if not path.is_file():
        raise BenchError(f"no {what} at {path}. Make them with `{make}`.")
    try:
        return json.loads(path.read_text())
    except json.JSONDecodeError as err:
        raise BenchError(f"{path} is not JSON ({err}); make it again with `{make}`.") from err


def read_results(path: str | Path, form: str, what: str, source: str, make: str) -> dict:
    """A JSON results file of format `form`, as `source` writes it, checked: a missing file,
    one that is not JSON or one of another format is a BenchError that says `what` it should
    hold and the command that `make`s it."""
    found = read_json(path, what, make)
    if not isinstance(found, dict) or found.get("format") != form:
        raise BenchError(f"{path} is not wd-teach {what} ({form}): not the output of "
                         f"{source}. Make them with `{make}`.")
    return found


def load_results(path: str | Path) -> dict:
    """Results written by `write_results`, checked to be that."""
    return read_results(path, FORMAT, "benchmark results", "`wd-teach bench`",
                        f"wd-teach bench all --out {path}")


def merge_results(parts: Sequence[dict]) -> dict:
    """Several runs on one machine as one: the first's header, every run's rows, the ratios
    worked out again over all of them (a CPU baseline may come from another run)."""
    if not parts:
        raise BenchError("nothing to merge: give at least one set of results.")
    names = {part["device"]["name"] for part in parts}
    if len(names) > 1:
        raise BenchError(f"results from different devices ({', '.join(sorted(names))}) do not "
                         "merge: their numbers are not comparable.")
    rows = [row for part in parts for row in part["rows"]]
    fields = set(Row.__dataclass_fields__)
    merged = dict(parts[0])
    merged["config"] = {"runs": [part["config"] for part in parts]}
    merged["rows"] = rows
    merged["ratios"] = ratios([Row(**{k: v for k, v in row.items() if k in fields})
                               for row in rows])
    return merged


def rows_of(results: dict, what: str | None = None, **match) -> list[dict]:
    """The rows of `results` for `what`, those that ran, with fields equal to `match`."""
    return [row for row in results["rows"]
            if (what is None or row["what"] == what) and row["seconds"] is not None
            and all(row.get(key) == value for key, value in match.items())]


# -- on screen -------------------------------------------------------------------------------


def _rate(value: float | None) -> str:
    return "-" if value is None else f"{value:.3g}"


def _row_line(row: Row) -> str:
    if not row.ok:
        return f"{row.what} {row.backend} {row.num_envs:,} x {row.num_agents}: {row.error}"
    return (f"{row.what} {row.backend} on {row.device}, {row.num_envs:,} envs x "
            f"{row.num_agents} agents: {row.env_steps_per_second:,.0f} env steps/s")


def format_table(results: dict) -> str:
    """The rows as a text table (with each one's ratio to the CPU baseline), then where the
    time of a training iteration goes, then the notes."""
    device, versions = results["device"], results["versions"]
    where = (f"{device['name']} (driver {device['driver']}, CUDA {device['driver_cuda']})"
             if device["kind"] == "cuda" else f"the CPU ({device['cpu']}, no GPU)")
    ratio = {(r["what"], r["backend"], r["device"], r["num_envs"], r["num_agents"]): r["ratio"]
             for r in results["ratios"]}
    head = ("what", "backend", "on", "envs", "agents", "env steps/s", "agent steps/s",
            "ms/call", "x CPU")
    cells = []
    for row in results["rows"]:
        key = (row["what"], row["backend"], row["device"], row["num_envs"], row["num_agents"])
        on = row["device"] + (" (baseline)" if row["baseline"] else "")
        cells.append((row["what"], row["backend"], on, f"{row['num_envs']:,}",
                      f"{row['num_agents']:,}", _rate(row["env_steps_per_second"]),
                      _rate(row["agent_steps_per_second"]),
                      "-" if row["ms_per_call"] is None else f"{row['ms_per_call']:.2f}",
                      f"{ratio[key]:.3g}" if key in ratio else "-"))
    lines = [f"Throughput on {where}; torch {versions['torch']}, wall clock after a warm-up", ""]
    lines += _columns(head, cells, left=3)
    lines += _breakdown_lines(results["rows"])
    notes = sorted({row["note"] for row in results["rows"] if row["note"]}
                   | {row["error"] for row in results["rows"] if row["error"]})
    lines += [""] + [f"note: {note}" for note in notes] if notes else []
    return "\n".join(lines)


def _columns(head: tuple[str, ...], cells: list[tuple[str, ...]], left: int) -> list[str]:
    """Aligned columns: the first `left` to the left, the numbers to the right."""
    widths = [max(len(c[i]) for c in [head, *cells]) for i in range(len(head))]
    lines = []
    for c in [head, *cells]:
        lines.append("  ".join(c[i].ljust(widths[i]) if i < left else c[i].rjust(widths[i])
                               for i in range(len(head))).rstrip())
    lines.insert(1, "-" * len(lines[0]))
    return lines


def _breakdown_lines(rows: list[dict]) -> list[str]:
    """Per train row, each phase's share of one profiled iteration."""
    from wd_teach.train.metrics import PHASES

    profiled = [row for row in rows if row.get("breakdown")]
    if not profiled:
        return []
    phases = [*PHASES, "other"]
    head = ("train", "on", "envs", "agents", *phases, "profiled ms")
    cells = []
    for row in profiled:
        total = row["breakdown"].get("total") or sum(row["breakdown"].get(p, 0) for p in phases)
        shares = [f"{100 * row['breakdown'].get(p, 0) / total:.0f}%" if total else "-"
                  for p in phases]
        cells.append((row["backend"], row["device"], f"{row['num_envs']:,}",
                      f"{row['num_agents']:,}", *shares, f"{1e3 * total:.1f}"))
    return ["", "Where an iteration's time goes (one profiled iteration, step by step, "
            "without CUDA graphs):", ""] + _columns(head, cells, left=2)



# -- the command line ------------------------------------------------------------------------


def command(args) -> int:
    """`wd-teach bench` (and bench/throughput.py): run, print the table, write the JSON."""
    counts = lambda text, name: None if text is None else parse_counts(text, name)
    backends = None if args.backend is None else tuple(args.backend.split(","))
    if not gpu_available():
        print("No GPU here: small sizes, torch on the CPU and Numba on the CUDA simulator. "
              "These numbers say nothing about GPU speed.\n")
    found = run_bench(args.what, envs=counts(args.envs, "envs"),
                      agents=counts(args.agents, "agents"), backends=backends,
                      iterations=args.iterations, cpu_baseline=args.cpu_baseline,
                      cpu_envs=counts(args.cpu_envs, "cpu-envs"),
                      cpu_iterations=args.cpu_iterations, env=args.env, sets=args.set,
                      log=None if args.quiet else print, out=args.out)
    print(("\n" if not args.quiet else "") + format_table(found))
    if args.out:
        print(f"\nwrote {args.out}")
    return 0
