"""Catch a kernel's spare threads writing past the end of an array, on a GPU too.

A launch with more threads than agents leaves spare threads; a kernel without its guard
(`if agent >= num_agents: return`) lets them write one slot past their environment's last
agent. On Numba's simulator that index is checked and raises. On a GPU nothing checks: the
spare threads of every environment but the last write into the next environment's first
agent the very value that agent's own thread writes there, and the last environment's write
lands past the array, in memory no one reads. The run looks right, and a checker that only
compares results passes a kernel that corrupts memory.

`FencedStore` makes that last write visible: each array sits at the front of a longer buffer
whose tail (a fence, one environment's worth of numbers) holds a marker, and after the launch
`trampled()` names the arrays whose fence changed. It is a DataStore in every other way, so
the learner's kernel is bound and launched exactly as the lessons do it.
"""

from __future__ import annotations

import numpy as np
import torch

from wd_teach import backends
from wd_teach.data import DataStore
from wd_teach.exercises.cuda_c_check import launch_learner_kernel

#: What a fence holds: a float no step computes, and for integers 0, so that a spare thread
#: that reads an index from a fence (an action) still reads inside the array it indexes.
MARKS = {torch.float32: 1.0e30, torch.float64: 1.0e30}


def _mark(dtype: torch.dtype) -> float | int:
    return MARKS.get(dtype, 0)


class FencedStore(DataStore):
    """A DataStore whose every array is followed, on the device, by a fence of markers."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._fences: dict[str, torch.Tensor] = {}

    def push(self, name, data, *, per="agent", reset=False, allow_nonfinite=False) -> None:
        super().push(name, data, per=per, reset=reset, allow_nonfinite=allow_nonfinite)
        array = self._arrays[name]
        size = array.numel()
        fence = max(1, size // self.num_envs)  # one environment's worth of numbers
        buffer = torch.full((size + fence,), _mark(array.dtype), dtype=array.dtype,
                            device=array.device)
        buffer[:size] = array.reshape(-1)
        self._arrays[name] = buffer[:size].view(array.shape)
        self._fences[name] = buffer[size:]

    @classmethod
    def copy_of(cls, store: DataStore, device: torch.device | None = None) -> FencedStore:
        """The same arrays and constants as `store`, each array fenced, on `device` (default:
        the store's)."""
        fenced = cls(store.num_envs, store.num_agents, store.episode_length,
                     device=device if device is not None else store.device)
        for name in store.names:
            info = store.info(name)
            fenced.push(name, store[name].cpu(), per=info.per, reset=info.reset,
                        allow_nonfinite=True)
        for name, value in store.constants.items():
            if name not in fenced.constants:
                fenced.set_constant(name, value.item() if isinstance(value, np.generic)
                                    else value)
        return fenced

    def trampled(self) -> list[str]:
        """The arrays whose fence no longer holds only markers: something wrote past them."""
        if self.device.type == "cuda":
            torch.cuda.synchronize(self.device)
        return [name for name, fence in self._fences.items()
                if not bool((fence == _mark(fence.dtype)).all())]


def spare_threads_stay_inside(store: DataStore, backend: str, kernels, where: str, hint: str,
                              *, max_threads: int, names: tuple[str, ...] | None = None,
                              guard_hint: str) -> bool:
    """Launch the learner's kernel(s) once on a fenced copy of `store`, `max_threads` per block
    (so that some threads have no agent), and say whether every fence held. False, with what
    was written past and `guard_hint`, when one did not, or when the launch itself failed."""
    fenced = FencedStore.copy_of(store, backends.get(backend).device())
    if launch_learner_kernel(fenced, backend, kernels, where, hint, max_threads=max_threads,
                             names=names) is None:
        return False
    past = fenced.trampled()
    if past:
        print(f"{where}: threads past the last agent wrote past the end of "
              f"{', '.join(past)}. The results can still look right (those writes land in "
              "memory nothing reads here), but in a real run that memory belongs to "
              "something else.")
        print(f"Hint: {guard_hint}")
        return False
    return True
