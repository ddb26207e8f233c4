"""Checker for 04_reset_and_log: a reset kernel, written by the learner in Numba.

The learner writes `reset_rows(data, pristine, done, row_length)`: for each environment whose
done flag is set, copy its row of `data` back from `pristine`; leave every other environment
alone. `data` and `pristine` are [envs, ...] float32 arrays seen as [envs, row_length] rows.
The checker launches it through `KernelLauncher` on fresh random data, with rows shorter and
longer than a block, with one and with several blocks per environment, and compares with
its own answer from the NumPy reference (wd_teach.reset.reference.reference_reset).
"""

from __future__ import annotations

import numpy as np
import torch

from wd_teach.data import DataStore
from wd_teach.errors import WdTeachError
from wd_teach.launch import KernelLauncher
from wd_teach.reset.reference import reference_reset

#: (array shape after the env axis, threads per block at most): rows of 1, 4 and 12 values,
#: with all of an environment's threads in one block, and split over several.
CASES = [((), 1024), ((4,), 1024), ((4, 3), 1024), ((4, 3), 2)]
NUM_ENVS, NUM_AGENTS = 5, 4


def check_reset_kernel(kernel) -> bool:
    """Check the learner's Numba kernel `reset_rows(data, pristine, done, row_length)`."""
    if kernel is None or not hasattr(kernel, "py_func"):
        print("Not yet: write reset_rows as a Numba kernel (@cuda.jit).")
        return False
    rng = np.random.default_rng()
    for shape, max_threads in CASES:
        if not _one_case(kernel, rng, shape, max_threads):
            return False
    print("All right: only the done environments went back to their start, whole rows of "
          "them, with one block and with several blocks per environment.")
    return True


def _one_case(kernel, rng, shape, max_threads) -> bool:
    store = DataStore(NUM_ENVS, NUM_AGENTS)
    full = (NUM_ENVS, *shape)
    per = "agent" if shape[:1] == (NUM_AGENTS,) else "env"
    store.push("data", rng.normal(size=full).astype(np.float32), per=per, reset=True)
    done = np.zeros(NUM_ENVS, np.int32)
    done[rng.choice(NUM_ENVS, size=2, replace=False)] = 1
    store.push("done", done, per="env")
    row_length = int(np.prod(shape, dtype=np.int64))
    store.set_constant("row_length", row_length)
    pristine_name = store.share_pristine("data")
    store["data"].copy_(torch.from_numpy(rng.normal(size=full).astype(np.float32)))
    before = store.pull("data")
    want = reference_reset({"data": before}, {"data": store.pull(pristine_name)}, done)["data"]
    where = (f"rows of {row_length} value(s), "
             f"{'several blocks' if max_threads < NUM_AGENTS else 'one block'} per environment")
    try:
        launcher = KernelLauncher(store, "numba", max_threads=max_threads)
        (name,) = launcher.load(kernel)
        launcher.launch(name, "data", pristine_name, "done", "row_length")
    except WdTeachError as err:
        print(f"With {where}: {err}\nHint: the parameters are data, pristine, done, "
              "row_length.")
        return False
    except Exception as err:  # the learner's kernel may fail in any way; say how
        print(f"With {where}: {type(err).__name__}: {err}\nHint: a thread's index along the "
              "row must stay below row_length.")
        return False
    got = store.pull("data")
    if np.array_equal(got, before):
        print(f"Not yet: with {where}, the kernel changed nothing. The done environments' "
              "rows must come back from pristine.")
        return False
    if not np.array_equal(store.pull("done"), done):
        print(f"With {where}: the done flags changed. This kernel only reads them; a "
              "separate launch (clear_done) lowers them once every array is restored.")
        return False
    for env in range(NUM_ENVS):
        if np.array_equal(got[env], want[env]):
            continue
        if not done[env]:
            print(f"With {where}: env {env} is not done, but its row changed. Return early "
                  "when done[env] == 0.")
        else:
            missed = int((got[env] != want[env]).sum())
            print(f"With {where}: env {env} is done, but {missed} of its {row_length} "
                  "value(s) were not restored. Hint: the threads of an environment (all its "
                  "blocks: cuda.gridDim.y * cuda.blockDim.x of them) stride over the row "
                  "together, starting at agent_id().")
        return False
    return True
