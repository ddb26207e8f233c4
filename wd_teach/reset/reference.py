"""The reset in NumPy: the twin of kernels.cu and kernels_numba.py, and what tests,
notebook 04 and its exercise check the device's reset against. `ReferenceResetter` is
`Resetter`'s twin over a CPU store: the reset of the NumPy backend (EnvWrapper)."""

import numpy as np


def reference_reset(arrays: dict[str, np.ndarray], pristine: dict[str, np.ndarray],
                    done: np.ndarray) -> dict[str, np.ndarray]:
    """NumPy twin of `Resetter.reset`: each array with the rows of done environments put
    back to their pristine values, the others as they were."""
    done = np.asarray(done) != 0
    out = {}
    for name, values in arrays.items():
        out[name] = values.copy()
        out[name][done] = pristine[name][done]
    return out


class ReferenceResetter:
    """`Resetter` for a store on the CPU, by `reference_reset`: the same `reset()`, which
    restores the done environments of every reset array with a row per environment from
    their pristine copies and lowers the flags."""

    def __init__(self, store, done: str = "done"):
        self.store, self.done_name = store, done
        self.names = [n for n in store.reset_names
                      if store.info(n).per != "shared" and n != done]

    def reset(self) -> None:
        done = self.store[self.done_name].numpy()
        if not done.any():
            return  # nothing finished: nothing to copy
        arrays = {name: self.store[name].numpy() for name in self.names}
        pristine = {name: self.store.pristine(name).numpy() for name in self.names}
        for name, values in reference_reset(arrays, pristine, done).items():
            arrays[name][...] = values  # into the store's own memory
        done[...] = 0
