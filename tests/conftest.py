"""Shared test set-up: the simulator decision is made by `import wd_teach`, before numba.

The tests take small sizes from wd_teach.lesson_sizes() on a GPU too (WD_TEACH_SIZES=small,
inherited by the notebook kernels that tests/test_notebooks.py starts): they prove that the
GPU path works in seconds. Full sizes are for the notebooks under nbval and the benchmarks.
"""

import os
import threading
import time
from pathlib import Path

os.environ.setdefault("WD_TEACH_SIZES", "small")

import pytest  # noqa: E402

import wd_teach  # noqa: E402
from wd_teach._watch import dump_stacks, stacks_period  # noqa: E402

BACKENDS_HERE = wd_teach.discover().backends
#: tests/test_notebooks.py's test that runs a notebook twice in one kernel: a minute or more
#: each on a GPU, spread apart when many workers share the tests (see below).
NOTEBOOK_RUNS = "test_notebook_runs_twice_without_restart"

# scripts/gpu_check.sh sets this to a folder: each test worker writes there when each test
# starts and ends, and the Python stacks of a test still running after STACKS_AFTER seconds,
# so that a part cut off by its time limit says which tests it was still waiting on, and where.
PROGRESS = os.environ.get("WD_TEACH_TEST_PROGRESS")
STACKS_AFTER = stacks_period()


def pytest_collection_finish(session):
    """Under the GPU check: how many tests there are, so the summary can say how many have no
    result (an interrupted run's JUnit file holds only those that finished)."""
    if PROGRESS:  # before any test: each test's lines go in this folder too
        Path(PROGRESS).mkdir(parents=True, exist_ok=True)
        (Path(PROGRESS) / "collected.txt").write_text(f"{len(session.items)}\n")


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item, nextitem):
    if not PROGRESS:
        yield
        return
    folder = Path(PROGRESS)
    worker = os.environ.get("PYTEST_XDIST_WORKER", "main")
    with open(folder / f"{worker}.tsv", "a") as log:
        log.write(f"start\t{time.time():.1f}\t{item.nodeid}\n")

    def late() -> None:
        with open(folder / f"{worker}.stacks", "a") as stacks:
            dump_stacks(stacks, f"{item.nodeid} is past {STACKS_AFTER:g} s")

    timer = threading.Timer(STACKS_AFTER, late)  # a Python thread: wd_teach/_watch.py says why
    timer.daemon = True
    timer.start()
    try:
        yield
    finally:
        timer.cancel()
    with open(folder / f"{worker}.tsv", "a") as log:
        log.write(f"end\t{time.time():.1f}\t{item.nodeid}\n")


def pytest_collection_modifyitems(config, items):
    """Tests marked `gpu` need a GPU: they are skipped, visibly, on machines without one.

    Spread over many workers (pytest-xdist, as scripts/gpu_check.sh runs them), the twelve
    notebook runs of tests/test_notebooks.py go to evenly spaced places: xdist's worksteal
    gives each worker a run of neighbouring tests, and the twelve side by side in pytest's
    order (about 750 s on an H200) made one worker's run outlast the check's limit at
    2f6dd56. (All the slow tests first, dealt out one by one, ran them all at once, each
    beside the others and the notebooks' own runs: slower still.)"""
    if os.environ.get("PYTEST_XDIST_WORKER"):
        items[:] = spread(items, lambda item: item.originalname == NOTEBOOK_RUNS)
    if wd_teach.gpu_available():
        return
    skip = pytest.mark.skip(reason="needs an NVIDIA GPU (run tests/gpu on the GPU machine)")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)


def spread(items: list, chosen) -> list:
    """`items` with those `chosen` moved to evenly spaced places among the rest, each group
    in its own order (the same order in every worker, as xdist requires)."""
    picked = [item for item in items if chosen(item)]
    rest = [item for item in items if not chosen(item)]
    if not picked:
        return list(items)
    step = len(rest) / len(picked)
    for k in reversed(range(len(picked))):  # from the back: earlier places stay put
        rest.insert(int((k + 0.5) * step), picked[k])
    return rest


@pytest.fixture(params=wd_teach.BACKENDS)
def backend(request):
    """Every backend this machine can run; PyCUDA is skipped where there is no GPU."""
    if request.param not in BACKENDS_HERE:
        pytest.skip(f"the {request.param} backend cannot run on this machine "
                    "(PyCUDA needs an NVIDIA GPU); tests/gpu runs it on one")
    return request.param


@pytest.fixture
def bench_script():
    """bench_script(name): the module bench/NAME.py, loaded from its file (bench/ is a folder
    of scripts, not a package)."""
    import importlib.util
    from pathlib import Path

    def load(name: str):
        path = Path(__file__).resolve().parents[1] / "bench" / f"{name}.py"
        spec = importlib.util.spec_from_file_location(f"bench_{name}", path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        return module

    return load
