"""What the PTX tests share: compile Numba kernels for a real GPU in a fresh process.

NVVM needs no GPU to write PTX, but Numba must not be on its simulator, which this test
session turned on; so each test runs a script in a new Python with the simulator off.
`compile_in_fresh_process(body)` runs PRELUDE + body; the body prints "compiled" at its end.
"""

import subprocess
import sys
import textwrap

import pytest

PRELUDE = textwrap.dedent("""
    import os
    os.environ["NUMBA_ENABLE_CUDASIM"] = "0"
    from types import SimpleNamespace

    from numba import cuda, types
    import numba.cuda.dispatcher as dispatcher

    # Device functions ask the current GPU for its compute capability; there may be none.
    try:
        cuda.get_current_device()
    except Exception:
        dispatcher.get_current_device = lambda: SimpleNamespace(compute_capability=(8, 0))
""")


def compile_in_fresh_process(body: str) -> None:
    """Run the script; skip only where NVVM itself is missing, fail on anything else."""
    script = PRELUDE + textwrap.dedent(body)
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          timeout=300)
    if done.returncode != 0 and ("NvvmSupportError" in done.stderr
                                 or "libnvvm" in done.stderr.lower()):
        pytest.skip("Numba's CUDA compiler (NVVM) is not installed here")
    assert done.returncode == 0, done.stderr[-3000:]
    assert "compiled" in done.stdout
