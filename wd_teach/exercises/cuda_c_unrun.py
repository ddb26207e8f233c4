"""What the CUDA C checkers of lessons 04 and 06 can check where PyCUDA cannot run (no GPU).

Without a GPU a CUDA C kernel cannot run, so its arithmetic cannot be checked. What can be
checked here is that it has the kernels the exercise asks for, that their parameters bind
against the store as the real launches would bind them (the same names, the same C types),
and, where nvcc is here, that it compiles. The verdict says so, and says plainly that the
kernel was NOT run: a learner must never read "All right" for code that nothing ran.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from wd_teach import cuda_c
from wd_teach.data import DataStore
from wd_teach.device import discover, nvcc_path
from wd_teach.errors import WdTeachError
from wd_teach.launch import cuda_c_argument

LABEL = "CUDA C"


def check_without_gpu(source, launches: dict[str, tuple[str, ...] | None], store: DataStore,
                      hint: str, must: Callable[[str], str | None] | None = None) -> bool:
    """Bind every kernel of `launches` ({kernel: the store names it is launched with, or None
    where it is launched by its own parameter names}) and compile `source` with nvcc if it
    is here. `must(code)`, given the code without its comments, returns what it lacks (or
    None). Prints what was checked and that nothing ran; returns True when nothing that was
    checked is wrong."""
    try:
        text = cuda_c.read_source(source)
        problem = _binding_problem(text, launches, store)
        if problem:
            print(f"{LABEL}: {problem}\nHint: {hint}")
            return False
        lacking = must(code_only(text)) if must else None
        if lacking:
            print(f"{LABEL}: {lacking}")
            return False
        if nvcc_path() is not None:
            cuda_c.ptx(text)
    except WdTeachError as err:  # a CompileError from nvcc, or a type the store lacks
        print(f"{LABEL}: {err}")
        return False
    compiled = ("compiles with nvcc" if nvcc_path() is not None
                else "was not compiled either (no nvcc here)")
    why = ("PyCUDA is not installed" if discover().has_gpu
           else "PyCUDA needs a GPU and this machine has none")
    print(f"{LABEL}: NOT run, so its results are NOT checked: {why}. What was checked: it "
          f"has {', '.join(launches)}, {'its' if len(launches) == 1 else 'their'} parameters "
          f"bind to the store, and it {compiled}. "
          "Run this cell on a GPU (Colab, say) to check what it computes.")
    return True


def code_only(text: str) -> str:
    """CUDA C without its comments: what a check reads, so a comment cannot satisfy it."""
    return re.sub(r"//[^\n]*|/\*.*?\*/", "", text, flags=re.S)


def _binding_problem(text: str, launches, store: DataStore) -> str | None:
    """The first kernel that is missing, empty, or does not bind as it is launched."""
    signatures = cuda_c.kernel_signatures(text)
    for kernel, args in launches.items():
        if kernel not in signatures:
            found = ", ".join(signatures) or 'none declared extern "C" __global__'
            return f"no kernel named {kernel!r} (found: {found})."
        if re.search(rf"\b{re.escape(kernel)}\s*\([^)]*\)\s*\{{\s*\}}", code_only(text)):
            return f"Not yet: {kernel} has an empty body."
        params = signatures[kernel]
        args = args if args is not None else tuple(p.name for p in params)
        missing = [a for a in args if a not in store]
        if missing:
            return (f"{kernel} takes {missing[0]!r}, but the store has no array or constant of "
                    "that name.")
        if len(params) != len(args):
            return (f"{kernel} takes {len(params)} parameter(s); it is launched with "
                    f"{len(args)} ({', '.join(args)}).")
        for param, arg in zip(params, args, strict=True):
            cuda_c_argument(store, kernel, param, arg)  # raises LaunchError on a wrong type
    return None
