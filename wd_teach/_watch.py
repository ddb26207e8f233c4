"""Where a process waits, for the GPU check: with WD_TEACH_TEST_PROGRESS set (a folder, by
scripts/gpu_check.sh), every process that imports wd_teach writes its Python stacks to
`pid-<pid>.stacks` there every WD_TEACH_TEST_STACKS_AFTER seconds (240) while it lives. A
test that runs a notebook's kernel, or trains seeds in processes of their own, waits on
them; when the check cuts that test off, these files show where the kernel and its
children were, which the test's own stacks (tests/conftest.py) cannot.

The stacks are read by a Python thread of our own holding the interpreter's lock, not by
faulthandler's watchdog: that one reads every thread's frames without the lock, and a dump
that met a thread being made or ended crashed the process (SIGSEGV, about one run in three
of `import wd_teach` under a 0.4 s period)."""

from __future__ import annotations

import os
import sys
import threading
import time
import traceback
from pathlib import Path

_watching = False


def stacks_period() -> float:
    """Seconds between two dumps of a process's stacks (and before a test's own dump, in
    tests/conftest.py): WD_TEACH_TEST_STACKS_AFTER, 240 unless set."""
    return float(os.environ.get("WD_TEACH_TEST_STACKS_AFTER", 240))


def dump_stacks(file, title: str = "") -> None:
    """Every thread's Python stack into `file` (open for text), with the time and `title`."""
    names = {thread.ident: thread.name for thread in threading.enumerate()}
    parts = [f"--- {time.strftime('%H:%M:%S')} {title}\n"]
    for ident, frame in sys._current_frames().items():
        parts.append(f"Thread {names.get(ident, ident)}:\n")
        parts.extend(traceback.format_stack(frame))
    file.write("".join(parts))
    file.flush()


def watch_from_environment() -> None:
    global _watching
    folder = os.environ.get("WD_TEACH_TEST_PROGRESS")
    if not folder or _watching:
        return
    try:  # a diagnostic: `import wd_teach` never fails for it
        every = stacks_period()
        Path(folder).mkdir(parents=True, exist_ok=True)
        path = Path(folder) / f"pid-{os.getpid()}.stacks"
        path.write_text(f"{' '.join(sys.argv)[:300]}\n")
    except (OSError, ValueError):
        return
    _watching = True

    def watch() -> None:
        while True:
            time.sleep(every)
            with open(path, "a") as file:
                dump_stacks(file, f"pid {os.getpid()}")

    threading.Thread(target=watch, name="wd_teach stacks", daemon=True).start()
