"""The two floors of wd_teach, and the one switch between them.

The **plain floor** is what the lessons show and import: a policy of `nn.Linear` layers and
two heads, A2C's and PPO's losses top to bottom, the rollout loop, a launcher that calls
PyCUDA's and Numba's own launch. CUDA graphs, bf16 and the on-device rollout live there
too: they are ideas the course teaches.

The **fast floor** is the folder `wd_teach/fast/`: everything that exists for speed alone
(Triton kernels, custom autograd, compiled losses, weights cast once per rollout, a direct
driver launch). Each piece there names the plain function it replaces and what it gained,
and a test holds it equal to that function. An env may have twins of its step kernels too,
beside its own steps (Env.fast_kernels), which the env wrapper launches on the fast floor.

One setting chooses, read here and nowhere else:

    WD_TEACH_FAST=auto   (the default) the fast floor on a CUDA GPU, the plain floor elsewhere
    WD_TEACH_FAST=1      the fast floor wherever it can run (on the CPU it changes little)
    WD_TEACH_FAST=0      the plain floor only: nothing under wd_teach/fast/ is imported

`set_fast(...)` changes it for this process (a notebook cell, a test), `fast_floor(device)`
answers it for one device.
"""

from __future__ import annotations

import os

import torch

ENV_VAR = "WD_TEACH_FAST"
CHOICES = {"auto": None, "1": True, "on": True, "true": True,
           "0": False, "off": False, "false": False}

#: The algorithms whose loss the fast floor can compile (trainer.compile): those with a twin
#: in wd_teach/fast/learners.py (a test keeps the two in step). Named here, at the door, so
#: that a config is checked without importing the fast floor.
COMPILED_LOSSES = ("a2c", "ppo")

_chosen: bool | None | str = "unset"  # set_fast's choice; "unset": read ENV_VAR


def _setting() -> bool | None:
    """True (on), False (off) or None (auto), from set_fast or else the environment."""
    if _chosen != "unset":
        return _chosen  # type: ignore[return-value]
    text = os.environ.get(ENV_VAR, "auto").strip().lower()
    if text not in CHOICES:
        raise ValueError(f"{ENV_VAR}={os.environ[ENV_VAR]!r} is not a setting: use auto "
                         "(the fast floor on a GPU), 1 (always) or 0 (never).")
    return CHOICES[text]


def fast_setting() -> bool | None:
    """This process's choice, True, False or None (auto): set_fast's, else WD_TEACH_FAST's.
    A process this one starts is handed it (`set_fast(fast_setting())` there), since a
    set_fast made here does not reach it through the environment."""
    return _setting()


def set_fast(on: bool | None | str) -> None:
    """Choose the floor for this process: True, False, or None / "auto" (on a GPU only);
    "reset" goes back to reading WD_TEACH_FAST."""
    global _chosen
    if on == "reset":
        _chosen = "unset"
        return
    if isinstance(on, str):
        if on.lower() not in CHOICES:
            raise ValueError(f"set_fast({on!r}): give True, False or 'auto'.")
        on = CHOICES[on.lower()]
    if on not in (True, False, None):
        raise ValueError(f"set_fast({on!r}): give True, False or 'auto'.")
    _chosen = on


def fast_floor(device: torch.device | str | None = None) -> bool:
    """Whether code running on `device` takes the fast floor (None: the default device,
    a CUDA GPU where torch sees one)."""
    setting = _setting()
    if setting is not None:
        return setting
    if device is None:
        return torch.cuda.is_available()
    return torch.device(device).type == "cuda"
