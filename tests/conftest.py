"""Shared test set-up: the simulator decision is made by `import wd_teach`, before numba.

The tests take small sizes from wd_teach.lesson_sizes() on a GPU too (WD_TEACH_SIZES=small,
inherited by the notebook kernels that tests/test_notebooks.py starts): they prove that the
GPU path works in seconds. Full sizes are for the notebooks under nbval and the benchmarks.
"""

import os

os.environ.setdefault("WD_TEACH_SIZES", "small")

import pytest  # noqa: E402

import wd_teach  # noqa: E402

BACKENDS_HERE = wd_teach.discover().backends


def pytest_collection_modifyitems(config, items):
    """Tests marked `gpu` need a GPU: they are skipped, visibly, on machines without one."""
    if wd_teach.gpu_available():
        return
    skip = pytest.mark.skip(reason="needs an NVIDIA GPU (run tests/gpu on the GPU machine)")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)


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
