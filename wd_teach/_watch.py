"""Where a process waits, for the GPU check: with WD_TEACH_TEST_PROGRESS set (a folder, by
scripts/gpu_check.sh), every process that imports wd_teach writes its Python stacks to
`pid-<pid>.stacks` there every WD_TEACH_TEST_STACKS_AFTER seconds (240) while it lives. A
test that runs a notebook's kernel, or trains seeds in processes of their own, waits on
them; when the check cuts that test off, these files show where the kernel and its
children were, which the test's own stacks (tests/conftest.py) cannot."""

from __future__ import annotations

import faulthandler
import os
import sys
from pathlib import Path

_stacks = None  # the open file: faulthandler writes to it from its own thread


def watch_from_environment() -> None:
    global _stacks
    folder = os.environ.get("WD_TEACH_TEST_PROGRESS")
    if not folder or _stacks is not None:
        return
    try:  # a diagnostic: `import wd_teach` never fails for it
        every = float(os.environ.get("WD_TEACH_TEST_STACKS_AFTER", 240))
        Path(folder).mkdir(parents=True, exist_ok=True)
        _stacks = open(Path(folder) / f"pid-{os.getpid()}.stacks", "w")  # noqa: SIM115
        _stacks.write(f"{' '.join(sys.argv)[:300]}\n")
        _stacks.flush()
        faulthandler.dump_traceback_later(every, repeat=True, file=_stacks)
    except (OSError, ValueError):
        _stacks = None
