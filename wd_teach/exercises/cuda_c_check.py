"""What every two-language checker shares: run each half that this machine can run beside
the NumPy reference, check the rest as far as it can be checked, and a verdict that says
which is which.

The verdict (verdict.Verdict) is true only when both halves ran and were right; where the
CUDA C half could not run, it is false, and its `passed_here` says whether what did run was
right.

A CUDA C kernel runs only through PyCUDA, on an NVIDIA GPU. Where there is none, the checker
binds the kernel's parameters by name against the store, as a launch would, and compiles it
with nvcc when nvcc is here. That proves the kernel is well formed, not that it computes the
right thing, so the verdict then names the half that was not run and why, and never says
"All right" for the whole.

Every checker also runs the learner's own code, which may fail in any way; the helpers at
the end load and launch it and turn whatever it raises into a hint for the learner, once
for all lessons.
"""

from __future__ import annotations

import contextlib
import io
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from wd_teach import backends, cuda_c
from wd_teach.device import choose_backend, discover, nvcc_path
from wd_teach.errors import WdTeachError
from wd_teach.exercises.host_c import HOST_C
from wd_teach.exercises.verdict import Verdict
from wd_teach.launch import KernelLauncher, cuda_c_argument
from wd_teach.lessons.show import cuda_function

LABEL = "CUDA C kernel"
#: How a verdict names each half, by backend.
#: Each half of an exercise by the backend that runs it (a backend is its name, so
#: LABELS["numba"] works too).
LABELS = {backends.NUMBA: "Numba kernel", backends.PYCUDA: LABEL}
#: What a kernel that crashes has most often done wrong.
CRASH_HINT = "threads past the last agent must do nothing: if agent >= num_agents, return."


@dataclass
class Tally:
    """Which halves ran and were right, which were found wrong, and which were not run
    (with the reason), in the order they were checked."""

    right: list[str] = field(default_factory=list)
    wrong: list[str] = field(default_factory=list)
    not_run: dict[str, str] = field(default_factory=dict)


def why_pycuda_cannot_run() -> str:
    """In words: why PyCUDA does not run CUDA C on this machine."""
    if not discover().has_gpu:
        return "PyCUDA runs CUDA C on an NVIDIA GPU, and this machine has none"
    return "PyCUDA is not installed here"


def check_halves(backend: str | None, run: Callable[[str, str], bool | str],
                 check_unrun_cuda_c: Callable[[], bool], whole: str, *,
                 on_the_cpu: bool = False) -> Verdict:
    """Check the Numba and the CUDA C half of an exercise, the notebook's backend first.

    `run(backend, label)` runs one half beside the NumPy reference and prints what it found
    (True: right; a sentence: part of it could not be checked here, and why). Where PyCUDA
    cannot run, `check_unrun_cuda_c()` checks what can be checked without running it (True:
    nothing found wrong): the half then counts as not run, never as right. With
    `on_the_cpu` (the exercise's kernels wait at no barrier), on a machine with no GPU the
    CUDA C half then also runs on the CPU (`run(HOST_C, ...)`, wd_teach/exercises/host_c.py),
    so what it computes is checked: found wrong there, it is wrong; right there, it still
    counts as not run on a GPU. `whole` is what "All right" vouches for."""
    backend = choose_backend(backend)
    tally = Tally()
    for half in [backend, *(b for b in LABELS if b != backend)]:
        label = LABELS[half]
        if half in discover().backends:
            outcome = run(half, label)
            if isinstance(outcome, str):
                tally.not_run[label] = outcome
            else:
                (tally.right if outcome else tally.wrong).append(label)
        elif half.reads_cuda_c and on_the_cpu and not discover().has_gpu and HOST_C.usable(
                None):
            _run_on_the_cpu(run, check_unrun_cuda_c, label, tally)
        elif half.reads_cuda_c:
            if check_unrun_cuda_c():
                tally.not_run[label] = why_pycuda_cannot_run()
            else:
                tally.wrong.append(label)
        else:
            reason = "Numba cannot run kernels on this machine (see wd_teach.doctor())"
            print(f"{label}: NOT run, because {reason}.")
            tally.not_run[label] = reason
    return verdict(tally, whole)


def _run_on_the_cpu(run, check_unrun_cuda_c, label: str, tally: Tally) -> None:
    """The CUDA C half where no GPU is: bound to the store and compiled by nvcc (what that
    printed is shown only when it found something wrong), then run on the CPU."""
    said = io.StringIO()
    with contextlib.redirect_stdout(said):
        well_formed = check_unrun_cuda_c()
    if not well_formed:
        print(said.getvalue(), end="")
        tally.wrong.append(label)
        return
    outcome = run(HOST_C, f"{label}, run on the CPU")
    if outcome is True:
        tally.not_run[f"{label} on a GPU"] = (
            f"{why_pycuda_cannot_run()}; it ran on the CPU instead, one thread after another, "
            "and was right there, but only a GPU runs the threads at once, where a race or a "
            "missing barrier shows")
    elif outcome is False:
        tally.wrong.append(label)
    else:
        tally.not_run[label] = outcome


def verdict(tally: Tally, whole: str) -> Verdict:
    """Print the last line of a check: "All right" only when every half ran and was right.
    The Verdict returned is true only then."""
    result = Verdict(tuple(tally.right), tuple(tally.wrong), tuple(tally.not_run.items()))
    if tally.wrong:
        print(f"Not yet: see above what is wrong with the {' and the '.join(tally.wrong)}.")
    elif not tally.not_run:
        print(f"All right: {whole}")
    else:
        checked = (f"the {' and the '.join(tally.right)}, run beside the NumPy reference: "
                   "right" if tally.right else "no half both ran and was checked whole")
        unrun = "; ".join(f"what the {label} computes, since it was not run ({why})"
                          if label == LABEL else f"the {label}: {why}"
                          for label, why in tally.not_run.items())
        print(f"Checked only in part. Checked here: {checked}. NOT checked: {unrun}. So there "
              "is no verdict on the whole yet (the result is not True): run this cell on a GPU "
              "with PyCUDA for one.")
    return result


def compile_only(source, store, hint: str, name: str | None = None) -> bool:
    """Where PyCUDA cannot run: the one extern "C" kernel of `source` (named `name`, when
    given) must have a body, its parameters must bind to `store` by name and type, and nvcc
    must compile it, when nvcc is here. Prints what was checked and what was not."""
    try:
        text = cuda_c.read_source(source)
        signatures = cuda_c.kernel_signatures(text)
    except WdTeachError as err:
        print(f"{LABEL}: {err}")
        return False
    if len(signatures) != 1 or (name is not None and name not in signatures):
        wanted = f"one, named {name}" if name else "one"
        print(f'{LABEL}: found extern "C" __global__ kernels {list(signatures)}; write '
              f"{wanted}.")
        return False
    (kernel, params), = signatures.items()
    if not kernel_body(text, kernel):
        print(f"{LABEL}: the body of {kernel} is empty: write it.")
        return False
    return bind_and_compile(text, kernel, params, store, hint)


def kernel_body(text: str, kernel: str) -> str:
    """The code between the braces of `kernel`, without comments or spaces at either end."""
    code = re.sub(r"//[^\n]*|/\*.*?\*/", "", cuda_function(text, kernel), flags=re.S)
    return code[code.find("{") + 1:code.rfind("}")].strip()


def bind_and_compile(text: str, kernel: str, params, store, hint: str) -> bool:
    """Every parameter of `kernel` found in `store` with the type the C says, then PTX from
    nvcc if it is here. Prints the verdict on this half; `hint` follows a missing
    parameter."""
    try:
        for param in params:
            if param.name not in store:
                print(f"{LABEL}: {kernel} needs {param.name!r}, but the store has no array or "
                      f"constant of that name.\nHint: {hint}")
                return False
            cuda_c_argument(store, kernel, param, param.name)
        if nvcc_path() is None:
            print(f"{LABEL}: its parameters match the store. It was neither compiled (nvcc "
                  f"is not here) nor run ({why_pycuda_cannot_run()}).")
            return True
        cuda_c.ptx(text)
    except WdTeachError as err:  # a CompileError from nvcc, or a type the store lacks
        print(f"{LABEL}: {err}")
        return False
    print(f"{LABEL}: nvcc compiles it and its parameters match the store. It was NOT run "
          f"({why_pycuda_cannot_run()}), so what it computes was not checked.")
    return True


def say_why_it_failed(err: Exception, where: str, hint: str,
                      crash_hint: str | None = CRASH_HINT) -> None:
    """Print what the learner's code raised, at `where`, with a hint: `hint` for a
    WdTeachError (a parameter the store lacks, a type that does not match: the names are
    the usual cause), `crash_hint` (when given) for anything else."""
    if isinstance(err, WdTeachError):
        print(f"{where}: {err}\nHint: {hint}")
        return
    print(f"{where} failed: {type(err).__name__}: {err}")
    if crash_hint:
        print(f"Hint: {crash_hint}")


def run_learner_code(run: Callable[[], Any], where: str, hint: str,
                     crash_hint: str | None = CRASH_HINT) -> Any:
    """What `run()` returns, or None when the learner's code in it raised: then it has
    printed why (see say_why_it_failed). `run` must not return None itself."""
    try:
        return run()
    except Exception as err:  # the learner's kernel may fail in any way; say how
        say_why_it_failed(err, where, hint, crash_hint)
        return None


def launch_learner_kernel(store, backend: str, kernels, where: str, hint: str, *,
                          max_threads: int, names: tuple[str, ...] | None = None,
                          launch: Callable[[KernelLauncher], Any] | None = None,
                          crash_hint: str | None = CRASH_HINT) -> Any:
    """Load the learner's kernel(s) on `store` for `backend` and launch them, as the
    package's own layers do (KernelLauncher: arguments bound by name, torch's stream).

    `names`: the kernels it must define (None: exactly one, of any name). `launch(launcher)`
    makes the launches (default: each kernel once, its arguments bound by its parameter
    names) and what it returns is returned. None when something failed: then it has
    printed what, at `where`, with `hint` or `crash_hint`."""
    def attempt() -> Any:
        launcher = KernelLauncher(store, backend, max_threads=max_threads)
        found = launcher.load(kernels)
        if names is None and len(found) != 1:
            print(f"{where}: found {len(found)} kernels ({', '.join(found)}); give one.")
            return None
        missing = [name for name in names or () if name not in found]
        if missing:
            raise WdTeachError(f"no kernel named {', '.join(missing)} (found: "
                               f"{', '.join(found) or 'none'}).")
        if launch is not None:
            return launch(launcher)
        for name in names or found:
            launcher.launch(name)
        return launcher

    return run_learner_code(attempt, where, hint, crash_hint)
