"""The NumPy backend: an env's reference step (reference.py) on the CPU, no kernels.

It is the baseline that the kernels are measured and checked against. The wrapper calls the
env's reference step on NumPy views of the store's CPU tensors, and resets finished
environments through the reset's NumPy twin (wd_teach/reset/reference.py).
"""

from __future__ import annotations

import torch

from wd_teach.backends.base import Backend


class NumPyBackend(Backend):
    label = "NumPy"
    color = "0.5"  # grey: the baseline
    runs_kernels = False

    def device(self) -> torch.device:
        return torch.device("cpu")

    def usable(self, report) -> bool:
        return True  # NumPy is a dependency of wd_teach itself
