"""compute-sanitizer on the package's own kernels, not only lesson 10's: a short training of
Tag continuous, Tag on a grid and speaker_listener (their step kernels, the nearest-neighbour
search, the action sampler, the resets and the fast floor's layers, launched one by one rather
than replayed as a CUDA graph: see SMALL), run under each tool and each backend, must end with
the tool's summary and no error. The known-wrong kernel each tool should find is
tests/gpu/test_gpu_fundamentals_gpu.py's; the fenced checkers (tests/gpu/test_fence_gpu.py)
catch a missing guard without the tool."""

import pytest
from test_sanitizer_program import RUNS, program

from wd_teach.device import BACKENDS
from wd_teach.fundamentals import sanitizer

needs_sanitizer = pytest.mark.skipif(sanitizer.find_compute_sanitizer() is None,
                                     reason="compute-sanitizer is not on this machine (CUDA "
                                            "toolkit, or pip's nvidia-cuda-sanitizer-api)")

@needs_sanitizer
@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("tool", sanitizer.TOOLS)
def test_the_packages_kernels_are_clean_under_every_tool(tool, backend, tmp_path):
    report = sanitizer.sanitize_program(program(backend, tmp_path), tool, time_limit=400)
    assert report.errors == 0, report.output[-3000:]
    for env in RUNS:  # each training ran to its end and saved its run
        assert (tmp_path / env / "config.yaml").is_file(), (env, report.output[-3000:])
