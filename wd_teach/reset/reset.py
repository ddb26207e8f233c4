"""Resetter: start finished episodes again, only those, without leaving the device.

Thousands of environments run side by side and their episodes end at different steps (a
runner caught, a goal reached, time up). Stopping them all to reset would waste the ones
still running; copying states to the host and back would waste the GPU. So each environment
has a done flag, `done` [envs] int32, that its step kernel raises; after each step the
resetter copies every reset array's row of the done environments back from its pristine copy
(kept in the store since the push, `push(..., reset=True)`) and lowers their flags. The rest
run on untouched. Kernel launches only: no host round trip in the loop.

Each array is seen as rows, [envs, row_length], whatever its shape after the first axis, so
one small copy kernel per C type serves every array (kernels.cu and kernels_numba.py
beside this file; the NumPy twin is reference.py). The random numbers' draw counts are not
reset: a restarted episode draws new numbers, not the old episode's again.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np

from wd_teach.data import DataStore
from wd_teach.errors import ResetError
from wd_teach.launch import MAX_THREADS_PER_BLOCK, KernelLauncher

#: The CUDA C kernels; their Numba twins are in wd_teach/reset/kernels_numba.py.
CUDA_C_PATH = Path(__file__).parent / "kernels.cu"
#: The copy kernel for each dtype the store holds.
RESET_KERNELS = {
    np.dtype(np.float32): "reset_float",
    np.dtype(np.int32): "reset_int",
    np.dtype(np.uint32): "reset_uint",
    np.dtype(np.uint8): "reset_uchar",
}
DONE = "done"


class Resetter:
    """Reset the done environments of a DataStore: `reset()` after every step.

    `names`: the arrays to restore; by default every array pushed with reset=True that has a
    row per environment. `done`: the name of the done flags, [envs] int32; pushed (all 0) if
    the store lacks them. Build it before the first kernel launch on the store.
    """

    def __init__(self, store: DataStore, names: Sequence[str] | None = None, *,
                 done: str = DONE, backend=None,
                 max_threads: int = MAX_THREADS_PER_BLOCK):
        if not isinstance(store, DataStore):
            raise ResetError(f"Resetter needs a DataStore, got {type(store).__name__}.")
        self.store = store
        self.done_name = done
        self._check_done()
        self.names = self._choose(names)
        self.launcher = KernelLauncher(store, backend, max_threads)
        with store.all_or_nothing():  # a failure below leaves the store as it was
            self._launches = self._add_to_store()
            self.launcher.load(self.backend.layer_kernels(__package__))  # kernels.cu or _numba

    def _add_to_store(self) -> list[tuple[str, ...]]:
        """Push the done flags if missing, a row-length constant and a shared pristine copy
        per array; returns each array's reset launch (kernel, array names...)."""
        store, done = self.store, self.done_name
        if done not in store:
            store.push(done, np.zeros(store.num_envs, np.int32), per="env")
        launches = []
        for name in self.names:
            info = store.info(name)
            row_length = int(np.prod(info.shape[1:], dtype=np.int64))
            row_name = f"{name}_row_length"
            if row_name not in store.constants:
                store.set_constant(row_name, row_length)
            elif store.constant(row_name) != row_length:
                raise ResetError(f"the store's constant {row_name!r} is "
                                 f"{store.constant(row_name)}, but a row of {name!r} holds "
                                 f"{row_length} values. Rename that constant.")
            launches.append((RESET_KERNELS[info.dtype], name, store.share_pristine(name),
                             done, row_name))
        return launches

    @property
    def backend(self):
        """The backend its launcher runs on (wd_teach.backends)."""
        return self.launcher.backend

    @property
    def done(self):
        """The done flags, [envs] int32, on the device: a step kernel sets them to 1."""
        return self.store[self.done_name]

    def reset(self) -> None:
        """Restore the done environments from their pristine copies and lower their flags.

        Environments that are not done are not touched. Kernel launches only: the flags are
        read on the device, never pulled."""
        for kernel, *arrays in self._launches:
            self.launcher.launch(kernel, *arrays)
        self.launcher.launch("clear_done", self.done_name)

    def reset_all(self) -> None:
        """Start every environment again (the first episode, or a forced restart): raise
        every flag, then reset as usual."""
        self.done.fill_(1)
        self.reset()

    def __repr__(self) -> str:
        return (f"Resetter({self.backend}, restores {', '.join(self.names) or 'nothing'} "
                f"where {self.done_name!r} is set)")

    # -- checks at the door -----------------------------------------------------------------

    def _check_done(self) -> None:
        name, store = self.done_name, self.store
        if name in store.constants:
            raise ResetError(f"{name!r} is a constant in the store; the done flags must be an "
                             f"array, [num_envs] int32, per='env'.")
        if name not in store:
            if not isinstance(name, str) or not name.isidentifier():
                raise ResetError(f"done={name!r} is not a valid array name.")
            return
        info = store.info(name)
        if info.per != "env" or info.shape != (store.num_envs,) or info.dtype != np.int32:
            raise ResetError(f"the done flags {name!r} are {info.dtype.name} {info.shape} "
                             f"per={info.per!r}; a reset reads one int32 per environment: "
                             f"push np.zeros({store.num_envs}, np.int32) with per='env'.")

    def _choose(self, names) -> list[str]:
        store = self.store
        if names is None:
            return [n for n in store.reset_names
                    if store.info(n).per != "shared" and n != self.done_name]
        if isinstance(names, str):
            names = [names]
        chosen = []
        for name in names:
            if name not in store.names:
                raise ResetError(f"no array named {name!r} to reset. Arrays: "
                                 f"{', '.join(store.names) or 'none'}.")
            if name == self.done_name:
                raise ResetError(f"{name!r} holds the done flags; the reset lowers them "
                                 "itself. Leave it out of `names`.")
            info = store.info(name)
            if info.per == "shared":
                raise ResetError(f"{name!r} is per='shared', one copy for all environments, "
                                 "so it has no row per environment to reset. Push it "
                                 "per='env' or per='agent' to reset it.")
            if not info.reset:
                raise ResetError(f"{name!r} was pushed without reset=True, so it has no "
                                 "pristine copy to restore from. Push it with reset=True.")
            if name not in chosen:
                chosen.append(name)
        return chosen
