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
PyCUDA on a GPU; without one it is only bound and compiled (cuda_c_check), and the verdict
says that it was NOT run and gives no "All right" for the whole.
"""

from __future__ import annotations

import numpy as np
import torch

from wd_teach import cuda_c
from wd_teach._simulator import simulator_on
from wd_teach.data import DataStore
from wd_teach.errors import WdTeachError
from wd_teach.exercises.cuda_c_check import (
    LABEL,
    bind_and_compile,
    check_halves,
    kernel_body,
    launch_learner_kernel,
)
from wd_teach.exercises.verdict import Verdict, not_yet
from wd_teach.launch import KernelLauncher, cuda_c_argument
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
WHOLE = ("only the done environments went back to their start, every agent of them, from "
         "their own pristine rows, and every flag is down, in Numba and in CUDA C.")


def check_reset(numba_kernels, cuda_c_source, backend: str | None = None) -> Verdict:
    """Check both halves: `numba_kernels` ([reset_rows, clear_done], @cuda.jit) and
    `cuda_c_source` (both kernels in CUDA C), the notebook's `backend` first."""
    if not isinstance(numba_kernels, (list, tuple)) or not numba_kernels \
            or not all(hasattr(k, "py_func") for k in numba_kernels):
        print("Not yet: pass [reset_rows, clear_done], both Numba kernels (@cuda.jit).")
        return not_yet()
    if not isinstance(cuda_c_source, str) or "reset_rows" not in cuda_c_source:
        print("Not yet: write the CUDA C source of reset_rows and clear_done as a string.")
        return not_yet()
    halves = {False: list(numba_kernels), True: cuda_c_source}  # by: is the half CUDA C?
    return check_halves(backend,
                        lambda half, label: _run_cases(halves[half.reads_cuda_c], half, label),
                        lambda: _check_unrun(cuda_c_source), WHOLE, on_the_cpu=True)


def _check_unrun(source: str) -> bool:
    """Where PyCUDA cannot run: both kernels there, with bodies, their parameters bound by
    name to a store that holds data, pristine, done and row_length, and compiled."""
    try:
        text = cuda_c.read_source(source)
        signatures = cuda_c.kernel_signatures(text)
        for kernel in KERNELS:
            if kernel not in signatures:
                print(f"{LABEL}: no kernel named {kernel} (found: "
                      f"{', '.join(signatures) or 'none'}).\nHint: {HINT}")
                return False
            if not kernel_body(text, kernel):
                print(f"{LABEL}: the body of {kernel} is empty: write it.")
                return False
        store = _named_store()
        for param in signatures["clear_done"]:
            if param.name not in store:
                print(f"{LABEL}: clear_done takes {param.name!r}; it is launched with the done "
                      f"flags only.\nHint: {HINT}")
                return False
            cuda_c_argument(store, "clear_done", param, param.name)
    except WdTeachError as err:
        print(f"{LABEL}: {err}")
        return False
    return bind_and_compile(text, "reset_rows", signatures["reset_rows"], store, HINT)


def _named_store() -> DataStore:
    """A store whose names are reset_rows' parameter names, to bind the CUDA C against."""
    store = DataStore(2, 3)
    store.push("data", np.zeros((2, 3), np.float32), per="agent")
    store.push("pristine", np.zeros((2, 3), np.float32), per="agent")
    store.push("done", np.zeros(2, np.int32), per="env")
    store.set_constant("row_length", 3)
    return store


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
        flags_mid = launch_learner_kernel(
            store, backend, kernels, f"{label}, {what}", HINT, max_threads=max_threads,
            names=KERNELS, launch=_reset, crash_hint="a thread's index along the row must stay "
                                                     "below row_length.")
        if flags_mid is None:
            return False
        got = {n: store.pull(n) for n in ARRAYS}
        message = _first_wrong(got, before, pristine, done, flags_mid, store.pull("done"))
        if message:
            print(f"{label}, {what}: {message}")
            return False
    where = "under the simulator" if simulator_on() else "on the GPU"
    print(f"{label}: ran on {backend} ({where}) with one block per environment, a part-full "
          "last block and a part-full warp: right.")
    return True


def _reset(launcher: KernelLauncher) -> np.ndarray:
    """The learner's reset, as Resetter.reset runs it; returns the flags between the
    reset_rows launches and clear_done."""
    for name in ARRAYS:
        launcher.launch("reset_rows", name, f"{name}_pristine", "done", f"{name}_row_length")
    flags_mid = launcher.store.pull("done")
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
