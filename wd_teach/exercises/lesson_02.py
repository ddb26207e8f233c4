"""Checker for 02_kernel_launch: a kernel that moves every agent, x <- x + v * dt.

The learner writes the step twice, as a Numba kernel and as CUDA C, with parameters named
after the store: `pos` and `vel` (per agent, float32), `dt` (float) and `num_agents` (int).
The checker launches each half that can run here through `KernelLauncher` on fresh random
data, twice: with one block per environment, and with the agents split over several blocks
so that some threads have no agent. It compares the result with NumPy.

Where PyCUDA cannot run (no GPU), the CUDA C half is compiled with nvcc and its parameters
are checked against the store, but it is not run: the verdict then says so, and "All right"
waits for a GPU.
"""

from __future__ import annotations

import numpy as np

from wd_teach.data import DataStore
from wd_teach.exercises.cuda_c_check import (
    CRASH_HINT,
    check_halves,
    compile_only,
    launch_learner_kernel,
)
from wd_teach.exercises.fence import spare_threads_stay_inside
from wd_teach.exercises.verdict import Verdict, not_yet
from wd_teach.launch import launch_geometry
from wd_teach.lessons.sizes import lesson_sizes

PARAMETERS = "pos, vel, dt, num_agents"


def make_store(rng: np.random.Generator | None = None) -> DataStore:
    """A fresh store at lesson size: random positions and velocities, a random dt."""
    sizes = lesson_sizes()
    rng = rng or np.random.default_rng()
    shape = (sizes.num_envs, sizes.num_agents)
    store = DataStore(sizes.num_envs, sizes.num_agents)
    store.push("pos", rng.uniform(-1, 1, shape).astype(np.float32), per="agent")
    store.push("vel", rng.uniform(-1, 1, shape).astype(np.float32), per="agent")
    store.set_constant("dt", float(rng.uniform(0.01, 0.5)))
    return store


def split_threads(num_agents: int) -> int:
    """Threads per block that split an environment's agents over two blocks, the second
    partly idle: a kernel that forgets agent_id() or its guard shows it here."""
    return max(1, num_agents // 2 + 1)


def check_move_kernel(numba_kernel, cuda_c_source, backend: str) -> Verdict:
    """Check both halves of the exercise; `backend` is the one the notebook runs on. The
    Verdict is true only when both ran and were right (the last line says what was not
    run)."""
    if numba_kernel is None or cuda_c_source is None:
        print("Not yet: write both the Numba kernel and the CUDA C source.")
        return not_yet()
    halves = {False: numba_kernel, True: cuda_c_source}  # by whether the half is CUDA C
    return check_halves(
        backend, lambda half, label: _run_both_shapes(halves[half.reads_cuda_c], half, label),
        lambda: compile_only(cuda_c_source, make_store(),
                             f"the parameters are {PARAMETERS}, named as in the store."),
        "every agent moved by vel * dt, in every environment, in both languages.",
        on_the_cpu=True)


def _run_both_shapes(kernel, backend: str, label: str) -> bool:
    agents = lesson_sizes().num_agents
    # First, the guard. On a GPU a kernel without it can still give right numbers (see
    # wd_teach.exercises.fence), and its stray writes can make the comparisons below point at
    # the wrong mistake: one launch, several blocks per environment, a fence after each array.
    if not spare_threads_stay_inside(
            make_store(), backend, kernel, f"{label}, several blocks per environment, fenced",
            f"the parameters are {PARAMETERS}, named as in the store.",
            max_threads=split_threads(agents), guard_hint=CRASH_HINT):
        return False
    for max_threads, shape in ((agents, "one block per environment"),
                               (split_threads(agents), "several blocks per environment")):
        store = make_store()
        start, vel = store.pull("pos"), store.pull("vel")
        want = start + vel * store.constant("dt")
        geometry = launch_geometry(store.num_envs, agents, max_threads)
        where = f"{label}, {shape} (grid {geometry.grid}, block {geometry.block})"
        if launch_learner_kernel(store, backend, kernel, where,
                                 f"the parameters are {PARAMETERS}, named as in the store.",
                                 max_threads=max_threads) is None:
            return False
        got, vel_after = store.pull("pos"), store.pull("vel")
        if not np.array_equal(vel_after, vel) and np.array_equal(got, start):
            print(f"{label}: vel changed and pos did not move. Only pos moves; vel is read, "
                  "not written.")
            return False
        wrong = ~np.isclose(got, want, rtol=1e-5, atol=1e-6)
        if wrong.any():
            env, agent = (int(i) for i in np.argwhere(wrong)[0])
            print(f"{where}: {int(wrong.sum())} of {wrong.size} positions are off; the first "
                  f"is env {env}, agent {agent}: got {got[env, agent]:.6f}, want "
                  f"{want[env, agent]:.6f}.")
            if max_threads < agents:
                print("Hint: with several blocks per environment, the agent is "
                      "blockIdx.y * blockDim.x + threadIdx.x (agent_id() / wd_agent_id()), "
                      "and threads past the last agent must not touch memory.")
            else:
                print("Hint: each thread does pos[env, agent] += vel[env, agent] * dt, with "
                      "env from env_id() and agent from agent_id().")
            return False
        if not np.array_equal(vel_after, vel):
            print(f"{label}: vel changed. Only pos moves; vel is read, not written.")
            return False
    print(f"{label}: ran on {backend}, one and several blocks per environment: right, and "
          "no thread wrote past the end of an array.")
    return True
