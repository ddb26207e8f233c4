"""Checker for 01_data_push: push an array into a DataStore the way kernels and resets need it.

The learner writes `build_store(heading)`: a new DataStore sized from `heading`, with the
array pushed as "heading", one float32 per agent, restored on reset. The checker calls it on
fresh random headings (numpy's default float64, as real data comes) and looks at what landed
on the device.
"""

from __future__ import annotations

import numpy as np

from wd_teach.data import DataStore
from wd_teach.errors import WdTeachError
from wd_teach.exercises.verdict import verdict_of
from wd_teach.lessons.sizes import lesson_sizes

NAME = "heading"


def random_headings(rng: np.random.Generator | None = None) -> np.ndarray:
    """One heading (radians, float64 as numpy makes them) per agent, at lesson size."""
    sizes = lesson_sizes()
    rng = rng or np.random.default_rng()
    return rng.uniform(0, 2 * np.pi, size=(sizes.num_envs, sizes.num_agents))


@verdict_of("build_store")
def check_heading_store(build_store) -> bool:
    """Call `build_store(heading)` twice on fresh data and check each store it returns."""
    if not callable(build_store):
        print("Not yet: pass your function build_store itself (no parentheses).")
        return False
    for attempt in range(2):
        heading = random_headings()
        try:
            store = build_store(heading.copy())
        except WdTeachError as err:
            print(f"Your build_store raised: {err}")
            if attempt:
                print("Hint: it worked once but not twice. Build a new DataStore inside "
                      "build_store each time; a name can be pushed into a store only once.")
            return False
        if not _check_one(store, heading):
            return False
    print(f"All right: {NAME!r} is on {store.device}, float32, one per agent, and a reset "
          "brings it back.")
    return True


def _check_one(store, heading: np.ndarray) -> bool:
    num_envs, num_agents = heading.shape
    if not isinstance(store, DataStore):
        print(f"build_store returned {type(store).__name__}; return the DataStore itself.")
        return False
    if (store.num_envs, store.num_agents) != (num_envs, num_agents):
        print(f"The store is for {store.num_envs} envs x {store.num_agents} agents, but the "
              f"headings are {num_envs} x {num_agents}. Hint: take the sizes from "
              "heading.shape.")
        return False
    if NAME not in store.names:
        print(f"No array named {NAME!r} in the store (it has: {', '.join(store.names) or 'none'}"
              f"). Hint: store.push({NAME!r}, ...).")
        return False
    info = store.info(NAME)
    if info.per != "agent":
        print(f"{NAME!r} was pushed per={info.per!r}, but there is one heading per agent. "
              "Hint: per=\"agent\", so a kernel finds it at [env, agent].")
        return False
    if info.dtype != np.float32:
        print(f"{NAME!r} is {info.dtype.name}; kernels read float32. Hint: .astype(np.float32).")
        return False
    want = heading.astype(np.float32)
    got = store.pull(NAME)
    if got.shape != want.shape or not np.array_equal(got, want):
        print(f"The values in the store are not the headings passed in (shape {got.shape}, "
              f"want {want.shape}). Hint: push the array you were given, converted only in "
              "dtype.")
        return False
    if not info.reset:
        print(f"{NAME!r} has no pristine copy, so a reset could not restore it. Hint: "
              "reset=True.")
        return False
    store[NAME].add_(1.0)  # one step of play, in place on the device ...
    store.restore()  # ... and a reset: the pristine copy must bring the start back
    if not np.array_equal(store.pull(NAME), want):
        print(f"After a step and a reset, {NAME!r} did not come back to its start. Hint: "
              "leave the pristine copy alone (read it, never write it).")
        return False
    return True
