"""Checker for 03_sampler: the sampler's draw loop, written by the learner as a kernel in both
languages.

The learner writes `draw_actions`: one thread per agent reads its row of `probs` [envs, agents,
num_actions] (float32) and its uniform number `u` [envs, agents] (float32), adds up the row
until the running sum passes u, and writes that action into `actions` [envs, agents] (int32).

The checker launches each half that can run here through `KernelLauncher`, with one and with
two blocks per environment, on rows whose answers it works out with the NumPy reference
(`wd_teach.sampler.reference.inverse_cdf`). Every environment's first agents hold the traps
(`TRAPS`: u = 0, u on a running sum, impossible actions, a float32 running sum that a float64
one gets wrong, rows that sum to a hair under 1 and end in impossible actions); the others
hold random rows, some with impossible actions, and the sampler's own Philox numbers. It names
the first agent that drew wrong. A Numba running sum that a GPU would make float64 (started at
`0.0` or `float(0)`) is refused by compiling the kernel for a GPU and reading its variables'
types (gpu_types): the simulator keeps such a sum float32, so no run there can show it.
Where PyCUDA cannot run, the CUDA C half is read (a `double` running sum is refused) and
compiled, not run, and the verdict says so.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np

from wd_teach import cuda_c
from wd_teach.data import DataStore
from wd_teach.errors import WdTeachError
from wd_teach.exercises.cuda_c_check import LABEL, check_halves, compile_only, launch_learner_kernel
from wd_teach.exercises.gpu_types import float64_variables
from wd_teach.exercises.verdict import Verdict, not_yet
from wd_teach.rng.reference import thread_uniforms
from wd_teach.sampler.reference import inverse_cdf

PARAMETERS = "probs, u, actions, num_actions, num_agents"
#: The checker's store: more agents than a warp, in a few environments.
NUM_ENVS, NUM_AGENTS, NUM_ACTIONS = 3, 40, 5
#: What `actions` holds before the launch: a thread that writes nothing leaves it there.
UNWRITTEN = -1
#: The largest float32 below 1: the largest u the sampler ever draws.
U_MAX = 1 - 2**-24
FLOAT32_SUM = ("the running sum is float32 in the sampler, added left to right: start it at "
               "np.float32(0.0) in Numba (a bare 0.0 or float(0) is a float64 on a GPU) and "
               "declare it float in C, never double.")


@dataclass(frozen=True)
class Trap:
    """A row and a u whose answer is known to catch one mistake, and the hint it earns."""

    about: str
    row: tuple[float, ...]
    u: float
    hint: str


TRAPS = (
    Trap("u = 0", (0.2, 0.3, 0.1, 0.25, 0.15), 0.0,
         "the first action whose running sum is above u wins: compare u < sum."),
    Trap("u just under 1", (0.2, 0.3, 0.1, 0.25, 0.15), U_MAX,
         "walk the whole row: the last action's running sum is 1, and u < 1 always."),
    Trap("u exactly on a running sum", (0.25, 0.25, 0.25, 0.125, 0.125), 0.25,
         "u = 0.25 is not below the first running sum (0.25), so action 0 does not win: use "
         "u < sum, not u <= sum."),
    Trap("an impossible first action", (0.0, 0.4, 0.3, 0.2, 0.1), 0.0,
         "an action with p = 0 is never drawn: its running sum equals the one before, and "
         "u < sum fails for it. Use u < sum, not u <= sum."),
    Trap("an impossible action just past u", (0.5, 0.0, 0.25, 0.25, 0.0), 0.5,
         "u = 0.5 is not below 0.5 at action 0, nor at action 1 (p = 0): action 2 wins."),
    Trap("a float32 running sum", (0.25, 0.258, 0.141, 0.078, 0.273), 0.649,
         "here the float32 sum of the first three is a hair above u and the float64 sum is "
         f"not, so the two draw different actions: {FLOAT32_SUM}"),
    Trap("a row a hair short of 1", (0.32, 0.13, 0.34, 0.0, 0.21), U_MAX,
         "in float32 this row sums to u, so u passes the whole row: take the last action with "
         "p > 0 (keep it as you walk the row)."),
    Trap("the probability-0 trap: a row short of 1 that ends in impossible actions",
         (0.3, 0.3, 0.3999999, 0.0, 0.0), U_MAX,
         "u passes the whole row (it sums to a rounding error under 1): take the last action "
         "with p > 0, never simply the last action."),
)
RANDOM_HINT = ("walk the row from action 0, adding p as you go, and stop at the first action "
               "where u < the running sum; past the end, the last action with p > 0.")


def make_draws(rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """(probs [envs, agents, actions], u [envs, agents]): the traps at every environment's first
    agents, random rows with some impossible actions after them, u from Philox."""
    shape = (NUM_ENVS, NUM_AGENTS)
    probs = rng.dirichlet(np.ones(NUM_ACTIONS), size=shape).astype(np.float32)
    impossible = rng.random(probs.shape) < 0.25
    impossible[..., 0] &= ~impossible[..., 1:].all(axis=-1)  # one action stays possible
    probs[impossible] = 0
    probs /= probs.sum(axis=-1, keepdims=True, dtype=np.float32)
    u = thread_uniforms(int(rng.integers(2**32)), np.zeros(shape, np.uint32))[..., 0]
    for agent, trap in enumerate(TRAPS):
        probs[:, agent] = np.array(trap.row, np.float32)
        u[:, agent] = np.float32(trap.u)
    return probs, u


def check_draw_kernels(numba_kernel, cuda_c_source, backend: str | None = None) -> Verdict:
    """Check both halves of the exercise; `backend` is the one the notebook runs on. The
    Verdict is true only when both ran and were right (the last line says what was not
    run)."""
    if numba_kernel is None or cuda_c_source is None:
        print("Not yet: write both the Numba kernel and the CUDA C source of draw_actions.")
        return not_yet()
    halves = {False: numba_kernel, True: cuda_c_source}  # by: is the half CUDA C?

    def run(half: str, label: str) -> bool | str:
        if not _run(halves[half.reads_cuda_c], half, label):
            return False
        if half.reads_cuda_c:
            return True
        float64 = _float64_on_a_gpu(numba_kernel, label)
        return True if float64 is None else float64

    return check_halves(
        backend, run,
        lambda: _check_unrun(cuda_c_source),
        f"every agent drew the sampler's action, on {len(TRAPS)} traps and random rows, in "
        "both languages.", on_the_cpu=True)


#: The kernel's arguments as a GPU compiles them: probs, u, actions, num_actions, num_agents.
ARG_TYPES = ("float32[:, :, ::1]", "float32[:, ::1]", "int32[:, ::1]", "int32", "int32")


def _float64_on_a_gpu(kernel, label: str) -> bool | str | None:
    """None when Numba's compiler for a GPU types no variable of the kernel float64; else
    False (it does: printed which) or the reason it could not be found out. The simulator
    cannot show this (it keeps such a sum float32, by NumPy's rules), so the kernel is
    compiled for a GPU and its variables' types are read (gpu_types)."""
    found = float64_variables(kernel, ARG_TYPES)
    if isinstance(found, str):
        if "nvvm" in found.lower():
            print(f"{label}: NOT checked whether its running sum is float32 on a GPU: {found}.")
            return f"the float32 running sum was not checked ({found})"
        print(f"{label}: {found}.")
        return False
    if not found:
        return None
    print(f"{label}: compiled for a GPU, {', '.join(found)} is a float64 (a float64 sum does "
          "not round as the sampler's float32 one; the simulator cannot show it, since it "
          f"keeps the sum float32).\nHint: {FLOAT32_SUM}")
    return False


def _run(kernel, backend: str, label: str) -> bool:
    rng = np.random.default_rng()
    for max_threads, shape in ((NUM_AGENTS, "one block per environment"),
                               (NUM_AGENTS // 2 + 1, "two blocks per environment")):
        probs, u = make_draws(rng)
        store = _store(probs, u)
        if launch_learner_kernel(store, backend, kernel, f"{label}, {shape}",
                                 f"the parameters are {PARAMETERS}, named as in the store.",
                                 max_threads=max_threads) is None:
            return False
        if not _all_right(store.pull("actions"), probs, u, f"{label}, {shape}"):
            return False
    print(f"{label}: ran on {backend} with one and with two blocks per environment: every "
          "agent drew the reference's action.")
    return True


def _store(probs: np.ndarray, u: np.ndarray) -> DataStore:
    store = DataStore(NUM_ENVS, NUM_AGENTS)
    store.push("probs", probs, per="agent")
    store.push("u", u, per="agent")
    store.push("actions", np.full((NUM_ENVS, NUM_AGENTS), UNWRITTEN, np.int32), per="agent")
    store.set_constant("num_actions", NUM_ACTIONS)
    return store


def _all_right(got: np.ndarray, probs: np.ndarray, u: np.ndarray, where: str) -> bool:
    """Compare with the reference; name the first agent that drew wrong, and why."""
    want = inverse_cdf(probs, u)
    wrong = got != want
    if not wrong.any():
        return True
    env, agent = (int(i) for i in np.argwhere(wrong)[0])
    row, drew = probs[env, agent], int(got[env, agent])
    about = TRAPS[agent].about if agent < len(TRAPS) else "a random row, the sampler's own u"
    print(f"{where}: {int(wrong.sum())} of {wrong.size} agents drew the wrong action. The first "
          f"is env {env}, agent {agent} ({about}): probs [{_show(row)}], u = "
          f"{float(u[env, agent]):.8g}; your kernel drew {drew}, the reference draws "
          f"{int(want[env, agent])}.")
    if drew == UNWRITTEN:
        print("Hint: nothing was written to this agent's action: every agent's thread writes "
              "actions[env, agent] once, after its loop.")
    elif 0 <= drew < NUM_ACTIONS and row[drew] == 0:
        print(f"Hint: action {drew} has p = 0, and an impossible action must never be drawn. "
              f"{TRAPS[agent].hint if agent < len(TRAPS) else RANDOM_HINT}")
    else:
        print(f"Hint: {TRAPS[agent].hint if agent < len(TRAPS) else RANDOM_HINT}")
    return False


def _check_unrun(source) -> bool:
    """Where PyCUDA cannot run: read the CUDA C for a double running sum, then bind and
    compile it."""
    try:
        code = re.sub(r"//[^\n]*|/\*.*?\*/", "", cuda_c.read_source(source), flags=re.S)
    except WdTeachError as err:
        print(f"{LABEL}: {err}")
        return False
    if re.search(r"\bdouble\b", code):
        print(f"{LABEL}: it adds in double. Hint: {FLOAT32_SUM}")
        return False
    return compile_only(source, _store(*make_draws(np.random.default_rng())),
                        f"the parameters are {PARAMETERS}, named as in the store.",
                        name="draw_actions")


def _show(row: np.ndarray) -> str:
    return ", ".join(f"{p:.7g}" for p in row)
