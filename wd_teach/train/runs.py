"""A run's folder: what `wd-teach train` leaves in it, and the rule that one run never
overwrites another by mistake.

A run folder holds config.yaml, metrics.csv, metrics.json, learning_curve.png (and
time_breakdown.png with --profile) and checkpoints: checkpoint_NNNNN.safetensors every
trainer.checkpoint_every iterations, checkpoint.safetensors at the end; with
trainer.logger tensorboard, TensorBoard's event files in tensorboard/. A new run into a
folder that already holds one is refused: choose another --out, go on from the old run with
--resume, or replace it with --force, which deletes the old run's files first so that the
folder never mixes two runs. Files that are not a run's (your notes) are left alone.
"""

from __future__ import annotations

import os
from pathlib import Path

from wd_teach.errors import TrainError
from wd_teach.files import TEMPORARY_SUFFIX
from wd_teach.train.checkpoint import SUFFIX, checkpoint_iteration, latest_checkpoint
from wd_teach.train.logger import TENSORBOARD_FOLDER

#: The names a run writes (glob patterns). checkpoint*.pt: the old, pickled format;
#: .*.tmp: what a run killed while writing leaves (wd_teach.files).
RUN_FILES = ("config.yaml", "metrics.csv", "metrics.json", "learning_curve.png",
             "time_breakdown.png", f"checkpoint*{SUFFIX}", "checkpoint*.pt",
             f".*{TEMPORARY_SUFFIX}", f"{TENSORBOARD_FOLDER}/events.out.tfevents.*")


def run_files(folder: str | Path) -> list[Path]:
    """The files of a run in `folder` (none if there is no such folder)."""
    folder = Path(folder)
    if not folder.is_dir():
        return []
    return sorted({p for pattern in RUN_FILES for p in folder.glob(pattern) if p.is_file()})


def check_run_folder(folder: str | Path, env: str, *, force: bool = False,
                     resuming: Path | None = None) -> None:
    """Refuse to write a run into `folder` where that would overwrite another run. Called
    before anything is written, so a refused command leaves every file as it was.

    `resuming`: the checkpoint a run goes on from. Its own folder is the same run going on,
    and may be written again, as long as it holds no checkpoint of a later iteration (going
    on from an earlier one would replace the later ones)."""
    folder = Path(folder)
    check_writable_folder(folder)
    if resuming is not None and folder.resolve() == resuming.parent.resolve():
        if force:
            raise TrainError(f"--force with --resume {resuming}: it would delete the checkpoint "
                             f"the run goes on from. Leave out --force to go on in {folder}, "
                             "or give another --out.")
        _refuse_going_back(folder, env, resuming)
        return
    found = run_files(folder)
    if found and not force:
        names = ", ".join(p.name for p in found[:4]) + (", ..." if len(found) > 4 else "")
        raise TrainError(f"{folder} already holds a run ({names}); wd-teach never overwrites "
                         "one. Choose another folder with --out DIR, go on from it with "
                         f"`wd-teach train {env} --resume {folder}`, or replace it with "
                         "--force (which deletes that run's files first).")


def check_writable_folder(folder: Path) -> None:
    """Refuse, before anything is written, an --out that can never hold a run: an existing
    file, a path under a file, or a folder this user may not write into. Without this the
    first write fails half way, with a traceback from pathlib instead of a sentence."""
    if folder.exists() and not folder.is_dir():
        raise TrainError(f"--out {folder} is a file, not a folder: a run writes several "
                         "files into a folder. Give a folder's path (new or existing).")
    existing = next(p for p in (folder, *folder.parents) if p.exists() or p.is_symlink())
    if not existing.is_dir():
        kind = "a broken link" if existing.is_symlink() and not existing.exists() else "a file"
        where = "is" if existing == folder else f"lies under {existing}, which is"
        raise TrainError(f"--out {folder} {where} {kind}, not a folder, so the run's folder "
                         "cannot be made there. Give a path whose parents are folders.")
    if not os.access(existing, os.W_OK | os.X_OK):
        what = "the folder" if existing == folder else f"{existing}, where it would be made,"
        raise TrainError(f"--out {folder}: {what} cannot be written by this user. Give a "
                         "folder you may write to (your home or the project's runs/).")


def clear_run_folder(folder: str | Path) -> list[Path]:
    """--force: delete the old run's files (only those, see RUN_FILES), so the new run's
    files are never mixed with the old one's. Returns what was deleted."""
    found = run_files(folder)
    for path in found:
        path.unlink()
    return found


def checkpoint_to_resume(path: str | Path) -> Path:
    """--resume takes a checkpoint file, or a run folder: then its latest checkpoint."""
    path = Path(path)
    return latest_checkpoint(path) if path.is_dir() else path


def _refuse_going_back(folder: Path, env: str, resuming: Path) -> None:
    """Going on in the run's own folder from an earlier checkpoint than its latest would
    replace the later checkpoints and metrics: refuse, naming the latest."""
    mine = checkpoint_iteration(resuming)
    later = [p for p in folder.glob(f"checkpoint*{SUFFIX}")
             if (it := checkpoint_iteration(p)) is not None and mine is not None and it > mine]
    if later:
        latest = latest_checkpoint(folder)
        raise TrainError(f"{folder} holds checkpoints later than {resuming.name} (iteration "
                         f"{mine}), up to {latest.name} (iteration "
                         f"{checkpoint_iteration(latest)}); going on there from an earlier one "
                         f"would replace them. Go on from the latest (`wd-teach train {env} "
                         f"--resume {folder}`) or write to another --out.")
