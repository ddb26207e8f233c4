"""Checkers for 04_reset_and_log: the reset, written by the learner in Numba and in CUDA C.

In each language the learner writes the two kernels of the package's own reset
(wd_teach/reset/kernels.cu): `reset_rows(data, pristine, done, row_length)` copies the row
of each done environment back from the pristine copy and leaves the others alone (float32
arrays, seen as rows [envs, row_length]); `clear_done(done)` lowers the flags, in a launch of
its own. The checker runs them as `Resetter.reset` does, reset_rows once per array, then
clear_done, on a world of three arrays (`pos` [envs, agents], `vel` [envs, agents, 2] and
`clock` [envs]) whose pristine rows differ from env to env, and compares with the NumPy
reference (wd_teach.reset.reference.reference_reset) and with every flag down.

Its cases catch the usual bugs: resetting environments that are not done; missing agents
of a done environment (more agents than a block, a part-full warp, rows longer than the
threads); changing the flags inside reset_rows, or never lowering them; copying another
environment's pristine row. It names the first wrong array, environment and agent.

The Numba kernels run on the GPU, or under the simulator without one. The CUDA C runs with
PyCUDA on a GPU; without one it is only compiled and bound (cuda_c_unrun), and the verdict
says that it was NOT run.
"""

from __future__ import annotations

import numpy as np
import torch

from wd_teach.data import DataStore
from wd_teach.device import discover
from wd_teach.errors import WdTeachError
from wd_teach.exercises.cuda_c_unrun import check_without_gpu
from wd_teach.launch import KernelLauncher
from wd_teach.reset.reference import reference_reset

#: (what the case tries, environments, agents, threads per block at most).
CASES = [
    ("one block per environment", 6, 4, 1024),
    ("37 agents in blocks of 16: three blocks per environment, the last part-full", 4, 37, 16),
    ("40 agents in one block: a full warp and a part-full one", 3, 40, 1024),
]
#: The arrays of the world: name -> (per, values per agent or per environment).
ARRAYS = {"pos": ("agent", ()), "vel": ("agent", (2,)), "clock": ("env", ())}
KERNELS = ("reset_rows", "clear_done")
HINT = ("write reset_rows(data, pristine, done, row_length) and clear_done(done), with "
        "these parameter names.")


def check_numba_reset(kernels) -> bool:
    """Check the learner's Numba `reset_rows` and `clear_done` (a list of the two kernels):
    on the GPU, or under the simulator where there is none."""
    if not isinstance(kernels, (list, tuple)) or not kernels \
            or not all(hasattr(k, "py_func") for k in kernels):
        print("Not yet: pass [reset_rows, clear_done], both Numba kernels (@cuda.jit).")
        return False
    where = "on the GPU" if discover().has_gpu else "under the simulator"
    if not _run_cases(list(kernels), "numba", "Numba"):
        return False
    print(f"All right, Numba ({where}): only the done environments went back to their "
          "start, every agent of them, from their own pristine rows, and every flag is down.")
    return True


def check_cuda_c_reset(source) -> bool:
    """Check the learner's CUDA C `reset_rows` and `clear_done`: run with PyCUDA on a GPU;
    without one, compiled and bound only, and reported as not run."""
    if not isinstance(source, str) or "reset_rows" not in source:
        print("Not yet: write the CUDA C source of reset_rows and clear_done as a string.")
        return False
    if not pycuda_runs():
        store, launches = _unrun_launches()
        return check_without_gpu(source, launches, store, HINT)
    if not _run_cases(source, "pycuda", "CUDA C"):
        return False
    print("All right, CUDA C (run with PyCUDA on the GPU): only the done environments went "
          "back to their start, every agent of them, from their own pristine rows, and every "
          "flag is down.")
    return True


def pycuda_runs() -> bool:
    """True where PyCUDA can run the CUDA C (a GPU, and PyCUDA installed)."""
    return "pycuda" in discover().backends


def _unrun_launches():
    """A small world and the launches a reset makes in it, to bind the CUDA C against."""
    store, *_ = _world(np.random.default_rng(), 2, 3)
    launches = {"reset_rows": ("pos", "pos_pristine", "done", "pos_row_length"),
                "clear_done": ("done",)}
    return store, launches


def _world(rng, num_envs: int, num_agents: int):
    """A store mid-episode: every array differs from its pristine copy, and each env's
    pristine row differs from every other env's; about half of the envs are done."""
    store = DataStore(num_envs, num_agents)
    for name, (per, tail) in ARRAYS.items():
        shape = (num_envs, num_agents, *tail) if per == "agent" else (num_envs, *tail)
        store.push(name, rng.normal(size=shape).astype(np.float32), per=per, reset=True)
        store.share_pristine(name)
        store.set_constant(f"{name}_row_length", int(np.prod(shape[1:], dtype=np.int64)))
        store[name].copy_(torch.from_numpy(rng.normal(size=shape).astype(np.float32)))
    done = np.zeros(num_envs, np.int32)
    done[rng.permutation(num_envs)[: num_envs // 2]] = 1
    store.push("done", done, per="env")
    return store, {n: store.pull(n) for n in ARRAYS}, done


def _run_cases(kernels, backend: str, label: str) -> bool:
    rng = np.random.default_rng()
    for what, num_envs, num_agents, max_threads in CASES:
        store, before, done = _world(rng, num_envs, num_agents)
        pristine = {n: store.pull(f"{n}_pristine") for n in ARRAYS}
        try:
            flags_mid = _reset(store, kernels, backend, max_threads)
        except WdTeachError as err:
            print(f"{label}, {what}: {err}\nHint: {HINT}")
            return False
        except Exception as err:  # the learner's kernel may fail in any way; say how
            print(f"{label}, {what}: {type(err).__name__}: {err}\nHint: a thread's index "
                  "along the row must stay below row_length.")
            return False
        got = {n: store.pull(n) for n in ARRAYS}
        message = _first_wrong(got, before, pristine, done, flags_mid, store.pull("done"))
        if message:
            print(f"{label}, {what}: {message}")
            return False
    return True


def _reset(store: DataStore, kernels, backend: str, max_threads: int) -> np.ndarray:
    """The learner's reset, as Resetter.reset runs it; returns the flags between the
    reset_rows launches and clear_done."""
    launcher = KernelLauncher(store, backend, max_threads=max_threads)
    names = launcher.load(kernels)
    missing = [k for k in KERNELS if k not in names]
    if missing:
        raise WdTeachError(f"no kernel named {', '.join(missing)} (found: {', '.join(names)}).")
    for name in ARRAYS:
        launcher.launch("reset_rows", name, f"{name}_pristine", "done", f"{name}_row_length")
    flags_mid = store.pull("done")
    launcher.launch("clear_done", "done")
    return flags_mid


def _first_wrong(got, before, pristine, done, flags_mid, flags_end) -> str | None:
    """What is wrong first, in the order that explains the most; None when nothing is."""
    if all(np.array_equal(got[n], before[n]) for n in ARRAYS):
        return ("Not yet: reset_rows changed nothing. The rows of the done environments must "
                "come back from pristine.")
    if not np.array_equal(flags_mid, done):
        env = int(np.flatnonzero(flags_mid != done)[0])
        return (f"reset_rows changed env {env}'s done flag ({done[env]} -> {flags_mid[env]}). "
                "It must only read the flags: the next array's reset, and the other blocks of "
                "the same environment, still need them. Lower them in clear_done, a launch of "
                "its own.")
    want = reference_reset(before, pristine, done)
    for name in ARRAYS:
        message = _wrong_rows(name, got[name], want[name], before[name], pristine[name], done)
        if message:
            return message
    if flags_end.any():
        env = int(np.flatnonzero(flags_end)[0])
        return (f"after clear_done, env {env}'s done flag is still {flags_end[env]}. "
                "clear_done must lower the flag of every environment (one thread each: "
                "agent_id() == 0 writes done[env_id()] = 0).")
    return None


def _wrong_rows(name, got, want, before, pristine, done) -> str | None:
    """The first environment of array `name` whose row is wrong, and how."""
    envs = got.shape[0]
    rows, want_rows = got.reshape(envs, -1), want.reshape(envs, -1)
    for env in range(envs):
        wrong = np.flatnonzero(rows[env] != want_rows[env])
        if wrong.size == 0:
            continue
        place = _place(name, got.shape, int(wrong[0]))
        if not done[env]:
            return (f"array {name!r}, env {env} is not done, but its row changed ({place} "
                    "first). Return early when done[env] == 0.")
        others = [e for e in range(envs) if e != env and np.array_equal(
            rows[env], pristine.reshape(envs, -1)[e])]
        if others:
            return (f"array {name!r}, env {env} is done, but its row was copied from env "
                    f"{others[0]}'s pristine row. The row of env e starts at "
                    "e * row_length, in data and in pristine alike.")
        missed = int((rows[env] == before.reshape(envs, -1)[env]).sum())
        if missed:
            return (f"array {name!r}, env {env} is done, but {missed} of its "
                    f"{rows.shape[1]} value(s) were not restored ({place} first). Hint: the "
                    "threads of an environment (all its blocks: gridDim.y * blockDim.x of "
                    "them) stride over the row together, starting at agent_id().")
        return (f"array {name!r}, env {env}, {place}: got {rows[env, wrong[0]]:.6g}, want "
                f"{want_rows[env, wrong[0]]:.6g} (its pristine value).")
    return None


def _place(name: str, shape: tuple[int, ...], index: int) -> str:
    """Where value `index` of a row is: the agent (and value) it belongs to, if any."""
    if ARRAYS[name][0] == "env":
        return f"value {index} of the row"
    per_agent = int(np.prod(shape[2:], dtype=np.int64))
    agent, value = divmod(index, per_agent)
    return f"agent {agent}" + (f", value {value}" if per_agent > 1 else "")
