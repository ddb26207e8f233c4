"""Shared test set-up: the simulator decision is made by `import wd_teach`, before numba."""

import pytest

import wd_teach

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
