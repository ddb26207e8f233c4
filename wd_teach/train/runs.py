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
from dataclasses import dataclass
from pathlib import Path

from wd_teach.errors import ConfigError, TrainError
from wd_teach.files import TEMPORARY_SUFFIX
from wd_teach.train.checkpoint import (
    SUFFIX,
    checkpoint_iteration,
    latest_checkpoint,
    read_checkpoint,
)
from wd_teach.train.config import read_yaml
from wd_teach.train.logger import TENSORBOARD_FOLDER

#: The names a run writes (glob patterns). checkpoint*.pt: the old, pickled format;
#: .*.tmp: what a run killed while writing leaves (wd_teach.files).
RUN_CONFIG = "config.yaml"
RUN_FILES = (RUN_CONFIG, "metrics.csv", "metrics.json", "learning_curve.png",
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


# -- reading a run back -----------------------------------------------------------------------

#: Settings a checkpoint's config may differ in from its run's config.yaml: where the
#: metrics went (--resume --logger changes it), which changes nothing of the run itself.
NOT_THE_RUN = ("trainer.logger",)


@dataclass(frozen=True)
class Run:
    """A run's folder, read back: its checkpoint, and the config that both its config.yaml
    and that checkpoint hold (checked the same), with the checkpoint's whole state."""

    folder: Path
    checkpoint: Path
    config: dict
    state: dict


def open_run(path: str | Path) -> Run:
    """The run in folder `path` (its latest checkpoint), or the run of the checkpoint file
    `path` (the folder it is in). A TrainError, saying what to give instead, for a path
    that is no run, a run with no checkpoint yet, or a checkpoint of another run."""
    path = Path(path)
    if not path.exists():
        raise TrainError(f"{path}: no such folder. Give a run's folder: the --out of "
                         "`wd-teach train` (runs/ENV by default).")
    folder = path.parent if path.is_file() else path
    config_path = folder / RUN_CONFIG
    if not config_path.is_file():
        raise TrainError(f"{folder} is not a run's folder: it has no {RUN_CONFIG}. A run's "
                         "folder is what `wd-teach train ENV` writes (runs/ENV, or its --out).")
    checkpoint = path if path.is_file() else _run_checkpoint(folder)
    state = read_checkpoint(checkpoint)  # a TrainError for anything that is not one
    try:
        config = read_yaml(config_path)
    except ConfigError as err:
        raise TrainError(f"{config_path} cannot be read: {err}") from None
    check_same_run(config, state.get("config"), config_path, checkpoint)
    return Run(folder, checkpoint, config, state)


def _run_checkpoint(folder: Path) -> Path:
    """A run folder's latest checkpoint, or why it has none."""
    try:
        return latest_checkpoint(folder)
    except TrainError:
        raise TrainError(f"{folder} holds a run but no checkpoint (checkpoint*{SUFFIX}): a run "
                         "writes one when it ends, and every trainer.checkpoint_every "
                         "iterations. Let it finish, or go on from where it is with "
                         "`wd-teach train ENV --resume`.") from None


def check_same_run(config: dict, theirs, config_path: Path, checkpoint: Path) -> None:
    """Refuse a checkpoint whose config is not the run's: another env's (a file copied into
    the folder), or the same env with other settings."""
    if not isinstance(theirs, dict):
        raise TrainError(f"{checkpoint} holds no run config: it is not a whole wd-teach "
                         "training checkpoint.")
    ours, its = (config.get("env") or {}).get("name"), (theirs.get("env") or {}).get("name")
    if ours != its:
        raise TrainError(f"{checkpoint} is a checkpoint of {its!r}, but its folder's "
                         f"{config_path.name} is a run of {ours!r}: it belongs to another run. "
                         "Give that run's folder, or the checkpoint's own.")
    differ = [key for key in differences(config, theirs) if key not in NOT_THE_RUN]
    if differ:
        raise TrainError(f"{checkpoint} was trained with other settings than its folder's "
                         f"{config_path.name} says ({', '.join(differ[:6])}"
                         f"{', ...' if len(differ) > 6 else ''}): it belongs to another run. "
                         "Give that run's folder, or the checkpoint's own.")


def differences(a, b, prefix: str = "") -> list[str]:
    """The dotted keys at which two configs (nested dicts) differ; lists and tuples alike."""
    if isinstance(a, dict) and isinstance(b, dict):
        return [d for key in sorted(set(a) | set(b), key=str)
                for d in differences(a.get(key), b.get(key), f"{prefix}{key}.")]
    same = (list(a) == list(b) if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple))
            else a == b)
    return [] if same else [prefix.rstrip(".")]
