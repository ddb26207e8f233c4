"""Decide, before Numba is first imported, whether its kernels run on a GPU or on the simulator.

Numba reads NUMBA_ENABLE_CUDASIM once, when it is imported. So `import wd_teach` makes the
choice first: a machine without a usable CUDA GPU gets the CUDA simulator, which runs every
Numba kernel on the CPU (slowly, one Python thread per CUDA thread). A learner who set the
variable keeps their choice.
"""

import os
import sys


def choose_numba_target() -> None:
    if "NUMBA_ENABLE_CUDASIM" in os.environ or "numba" in sys.modules:
        return  # the learner chose, or it is too late to choose: `wd-teach doctor` reports it
    import torch

    if not torch.cuda.is_available():
        os.environ["NUMBA_ENABLE_CUDASIM"] = "1"


def numba_import_error() -> str | None:
    """Why Numba's CUDA target cannot be imported, or None when it can. `import wd_teach`
    never imports Numba, so a machine without it can still run `wd-teach doctor`."""
    try:
        from numba import cuda  # noqa: F401
    except ImportError as err:
        return str(err) or type(err).__name__
    return None


def simulator_on() -> bool:
    """True when Numba kernels run on the CUDA simulator instead of a GPU (never without
    Numba: there is nothing to simulate with)."""
    if numba_import_error() is not None:
        return False
    from numba import config

    return bool(config.ENABLE_CUDASIM)
