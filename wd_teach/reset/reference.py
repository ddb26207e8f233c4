"""The reset in NumPy: the twin of kernels.cu and kernels_numba.py, and what tests,
notebook 04 and its exercise check the device's reset against. `ReferenceResetter` is
`Resetter`'s twin over a CPU store: the reset of the NumPy backend (EnvWrapper)."""

import numpy as np


def reference_reset(arrays: dict[str, np.ndarray], pristine: dict[str, np.ndarray],
                    done: np.ndarray) -> dict[str, np.ndarray]:
    """NumPy twin of `Resetter.reset`: each array with the rows of done environments put
    back to their pristine values, the others as they were."""
    out = {name: values.copy() for name, values in arrays.items()}
    restore_done(out, pristine, done)
    return out


def restore_done(arrays: dict[str, np.ndarray], pristine: dict[str, np.ndarray],
                 done: np.ndarray) -> None:
    """`reference_reset` in place: the rows of done environments of each array put back to
    their pristine values."""
    done = np.asarray(done) != 0
    for name, values in arrays.items():
        values[done] = pristine[name][done]


class ReferenceResetter:
    """`Resetter` for a store on the CPU, by `restore_done` (the reference reset in place):
    the same `reset()`, which restores the done environments of every reset array with a
    row per environment from their pristine copies and lowers the flags."""

    def __init__(self, store, done: str = "done"):
        self.store, self.done_name = store, done
        self.names = [n for n in store.reset_names
                      if store.info(n).per != "shared" and n != done]

    def reset(self) -> None:
        done = self.store[self.done_name].numpy()
        arrays = {name: self.store[name].numpy() for name in self.names}  # the store's memory
        pristine = {name: self.store.pristine(name).numpy() for name in self.names}
        restore_done(arrays, pristine, done)
        done[...] = 0
