"""Whether every thread of a block reaches a kernel's barriers: counted on the simulator, read
from the code where the kernel runs on a GPU.

A barrier (cuda.syncthreads(), __syncthreads()) waits for every thread of its block. A barrier
that some threads never reach (they returned first, or skipped the branch that holds it) is
undefined behaviour on a GPU: the block can hang, or go on before the others have written.
The simulator does not show it by itself: it releases a barrier once every thread still
running waits there. So on the simulator the checker counts, per thread, the barriers each one
reached (`counting_barriers`), in a launch whose block is larger than the agents: every thread
of a block must reach as many. On a GPU a Numba kernel cannot be watched that way, so its code
is read instead (`numba_barrier_problems`), before it is launched; so is CUDA C
(`cuda_c_barrier_problems`). CUDA C that reads right is then launched once more under
compute-sanitizer's synccheck, where the tool is here (`synccheck`), which watches the
barriers on the GPU itself.
"""

from __future__ import annotations

import ast
import inspect
import re
import subprocess
import sys
import textwrap
import threading
from collections.abc import Iterator
from contextlib import contextmanager

NO_BARRIER = ("there is no barrier between the move and the reads, so an agent can read a "
              "neighbour's position before that neighbour has moved (or half-way through). Put "
              "cuda.syncthreads() (in CUDA C: __syncthreads();) after every agent's move and "
              "before any agent reads the others.")
UNREACHED = ("some threads of a block never reach the barrier: they return before it, or skip "
             "the branch that holds it. Every thread of the block must reach the barrier: on a "
             "GPU a barrier that some threads never reach is undefined (the block can hang, or "
             "go on before the others have written). Instead of `if agent >= num_agents: "
             "return`, keep `active = agent < num_agents`, put the work under `if active:` on "
             "both sides of the barrier, and the barrier itself outside any branch.")


@contextmanager
def counting_barriers() -> Iterator[dict]:
    """On the simulator: while open, count per thread the barriers it reaches, in every block
    launched. Yields {block: {thread: barriers reached}} (the simulator's own objects; see
    `uneven_blocks`)."""
    from numba.cuda.simulator import kernel as simulator

    counts: dict = {}
    lock = threading.Lock()
    run, syncthreads = simulator.BlockThread.run, simulator.BlockThread.syncthreads

    def counted_run(thread):
        with lock:
            counts.setdefault(thread._manager, {})[thread] = 0
        run(thread)

    def counted_syncthreads(thread):
        with lock:
            counts[thread._manager][thread] += 1
        syncthreads(thread)

    simulator.BlockThread.run = counted_run
    simulator.BlockThread.syncthreads = counted_syncthreads
    try:
        yield counts
    finally:
        simulator.BlockThread.run, simulator.BlockThread.syncthreads = run, syncthreads


def barrier_problems(counts: dict) -> list[str]:
    """What the counts show: no barrier reached at all, or a block whose threads reached
    different numbers of barriers (the first such block, with who reached how many)."""
    if not counts:
        return []  # nothing was launched
    if all(n == 0 for threads in counts.values() for n in threads.values()):
        return [NO_BARRIER]
    for threads in counts.values():
        reached = {}
        for thread, n in threads.items():
            reached.setdefault(n, []).append(thread.threadIdx.x)
        if len(reached) > 1:
            block = next(iter(threads)).blockIdx
            who = "; ".join(f"threads {_span(sorted(xs))} reached {n}"
                            for n, xs in sorted(reached.items(), reverse=True))
            return [f"in block ({block.x}, {block.y}) {who} barrier(s). So {UNREACHED}"]
    return []


def _span(xs: list[int]) -> str:
    return f"{xs[0]}..{xs[-1]}" if len(xs) > 1 else str(xs[0])


def numba_barrier_problems(kernel) -> list[str]:
    """Read from a Numba kernel's code: no barrier, a return before one, or a barrier inside
    a branch. For a GPU, where a run cannot be watched and such a launch could hang."""
    try:
        tree = ast.parse(textwrap.dedent(inspect.getsource(kernel.py_func)))
    except (AttributeError, OSError, TypeError, SyntaxError):
        return []  # no source to read (made by exec, say): the run is all there is
    barriers = [node for node in ast.walk(tree) if _is_barrier(node)]
    if not barriers:
        return [NO_BARRIER]
    returns = [node.lineno for node in ast.walk(tree) if isinstance(node, ast.Return)]
    in_branch = [node for branch in ast.walk(tree) if isinstance(branch, ast.If)
                 for node in ast.walk(branch) if _is_barrier(node)]
    last = max(node.lineno for node in barriers)
    if in_branch or any(line < last for line in returns):
        return [UNREACHED]
    return []


def _is_barrier(node) -> bool:
    return isinstance(node, ast.Call) and getattr(node.func, "attr", getattr(
        node.func, "id", "")) == "syncthreads"


def cuda_c_barrier_problems(text: str, kernel: str) -> list[str]:
    """The same, read from the CUDA C of `kernel`: no __syncthreads(), a return before it, or
    one inside a block or after an `if` that some threads may skip."""
    code = re.sub(r"//[^\n]*|/\*.*?\*/", "", text, flags=re.S)
    if kernel not in code:
        return []  # the compile step says which kernel it found instead
    code = code[code.find(kernel):]
    body = code.find("{")
    barriers = [m.start() for m in re.finditer(r"__syncthreads\s*\(", code)]
    if not barriers:
        return [NO_BARRIER]
    returns = [m.start() for m in re.finditer(r"\breturn\b", code)]
    nested = any(code[body:where].count("{") > code[body:where].count("}") + 1
                 for where in barriers)
    guarded = re.search(r"\bif\s*\([^;{}]*\)\s*__syncthreads", code)
    if nested or guarded or any(where < max(barriers) for where in returns):
        return [UNREACHED]
    return []


#: The exit status compute-sanitizer is told to give when it finds an error.
SANITIZER_ERROR = 86
#: Seconds a run under compute-sanitizer may take (it starts a fresh Python, torch included).
SANITIZER_TIME_LIMIT = 300


def compute_sanitizer() -> str | None:
    """Where compute-sanitizer is, or None: lesson 10's finder (the PATH, $CUDA_HOME, beside
    nvcc, /usr/local/cuda*/bin, NVIDIA's pip wheel)."""
    from wd_teach.fundamentals.sanitizer import find_compute_sanitizer

    return find_compute_sanitizer()


def synccheck(script: str, *args: str, stdin: str = "") -> list[str] | str:
    """Run the Python `script` (with `args`, and `stdin` as its input), which launches a
    kernel and prints "launched", under compute-sanitizer's synccheck. [] when it finds no
    barrier error, [what it found] when it does, or a sentence saying why it could not
    check."""
    tool = compute_sanitizer()
    if tool is None:
        return "compute-sanitizer is not on this machine"
    command = [tool, "--tool", "synccheck", "--error-exitcode", str(SANITIZER_ERROR),
               sys.executable, "-c", script, *args]
    try:
        done = subprocess.run(command, input=stdin, capture_output=True, text=True,
                              timeout=SANITIZER_TIME_LIMIT)
    except subprocess.TimeoutExpired:
        return f"compute-sanitizer took over {SANITIZER_TIME_LIMIT} s"
    said = (done.stdout + done.stderr).splitlines()
    errors = [line.strip(" =") for line in said if "Barrier error" in line]
    if done.returncode == SANITIZER_ERROR and errors:
        return [f"compute-sanitizer's synccheck: {errors[0]}. So {UNREACHED}"]
    if done.returncode != 0 or not any(line.strip() == "launched" for line in said):
        last = said[-1].strip(" =") if said else f"exit status {done.returncode}"
        return f"compute-sanitizer could not run the kernel ({last})"
    return []
