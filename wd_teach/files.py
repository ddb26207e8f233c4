"""Files written whole or not at all.

A training run writes checkpoints, metrics and pictures while it goes, and it may be killed
at any moment (Ctrl-C, an out-of-memory kill, a lost machine). A file written in place and
cut off half way is worse than none: it looks like a result. So every file a run leaves is
first written under a temporary name in the same folder and only renamed onto its real name
once it is complete (with the mode any new file gets under the umask). On one file system a
rename is atomic (os.replace): whoever looks finds the old file or the new one, never half
of one.

    with atomic_write(out / "metrics.csv") as temporary:
        temporary.write_text(text)          # any writer that takes a path

The temporary name is hidden and ends in .tmp (`.metrics.csv.4242.tmp`), so nothing that
looks for `checkpoint*.safetensors` or `*.csv` takes it for a finished file.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

#: How a temporary file's name ends; `wd-teach train --force` clears leftovers of a crash.
TEMPORARY_SUFFIX = ".tmp"


def temporary_name(path: Path) -> Path:
    """Where `path` is written before it is renamed into place: the same folder (a rename
    across file systems would be a copy, not atomic), hidden, with this process's id so that
    two writers never share one."""
    return path.with_name(f".{path.name}.{os.getpid()}{TEMPORARY_SUFFIX}")


@contextmanager
def atomic_write(path: str | Path) -> Iterator[Path]:
    """Yield a temporary path to write; when the block ends without an error, move the
    finished file onto `path` in one step. On an error the temporary file is removed and
    `path` is left as it was (the old file, or none)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = temporary_name(path)
    try:
        yield temporary
        _flush_to_disk(temporary)
        os.chmod(temporary, new_file_mode())
        os.replace(temporary, path)
    finally:
        temporary.unlink(missing_ok=True)  # gone already after a successful replace


def new_file_mode() -> int:
    """The mode `open()` gives a new file here: rw for all, less the umask (0o644 under the
    usual 022). Some writers make their file private (safetensors' save_file writes 0o600),
    so every file is given this mode before it is renamed into place: a run's files all
    share one, and whoever may read its metrics may read its checkpoints."""
    umask = os.umask(0)  # reading the umask means setting it: put it straight back
    os.umask(umask)
    return 0o666 & ~umask


def write_text(path: str | Path, text: str) -> Path:
    """`Path.write_text`, whole or not at all."""
    with atomic_write(path) as temporary:
        temporary.write_text(text)
    return Path(path)


def _flush_to_disk(path: Path) -> None:
    """Make the bytes durable before the rename makes them visible: otherwise a power cut
    right after the rename could leave the new name on an empty file."""
    with open(path, "rb") as f:
        os.fsync(f.fileno())
