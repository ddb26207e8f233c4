"""compute-sanitizer on the package's own kernels, not only lesson 10's: Tag continuous, Tag on
a grid and speaker_listener stepped through two episodes with the sampler drawing every action
and the resetter restarting finished envs (wd_teach.fundamentals.package_run), under each tool
and each backend, must end with the tool's summary, no error, and every env stepped. The
known-wrong kernel each tool should find is tests/gpu/test_gpu_fundamentals_gpu.py's; the
fenced checkers (tests/gpu/test_fence_gpu.py) catch a missing guard without the tool."""

import pytest

from wd_teach.device import BACKENDS
from wd_teach.fundamentals import package_run, sanitizer

needs_sanitizer = pytest.mark.skipif(sanitizer.find_compute_sanitizer() is None,
                                     reason="compute-sanitizer is not on this machine (CUDA "
                                            "toolkit, or pip's nvidia-cuda-sanitizer-api)")


@needs_sanitizer
@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("tool", sanitizer.TOOLS)
def test_the_packages_kernels_are_clean_under_every_tool(tool, backend):
    report = sanitizer.sanitize_program(["-m", package_run.__name__, "--backend", backend],
                                        tool, time_limit=300)
    assert report.errors == 0, report.output[-3000:]
    for env in package_run.ENVS:  # the program ran to its end: every env was stepped
        assert f"stepped {env} " in report.output, (env, report.output[-3000:])
