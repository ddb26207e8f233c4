"""Where a run's numbers go while it trains, besides the files written at its end.

Every run keeps its history (one row per iteration) and leaves metrics.csv, metrics.json
and the pictures when it ends (wd_teach/train/report.py). `trainer.logger: tensorboard`
adds TensorBoard event files, written row by row AS the run trains, so a learning curve
can be watched live and runs compared side by side:

    Trainer("cartpole", logger="tensorboard").train(out="runs/cartpole")
    # event files in runs/cartpole/tensorboard/; then: tensorboard --logdir runs

A row reaches this module already on the host (Trainer.iterate pulls every metric in its
one copy), so writing it adds no wait for the GPU: a few Python floats per iteration,
handed to a writer that flushes to disk on its own thread.

The scalars carry the history's names (`cart/return`, `cart/policy_loss`,
`steps_per_second`, `time/policy`, ...), and their step is the run's environment steps,
the horizontal axis of every learning curve here: runs with different numbers of envs
line up, and a run resumed from a checkpoint goes on where it stopped.
"""

from __future__ import annotations

import math
from pathlib import Path

from wd_teach.errors import TrainError

#: The values trainer.logger takes. csv: the history and the files at the end (always
#: written); tensorboard: those, and TensorBoard event files as the run trains.
LOGGERS = ("csv", "tensorboard")
#: The folder inside a run folder that holds the event files.
TENSORBOARD_FOLDER = "tensorboard"
#: The history's columns that are axes rather than scalars of their own.
AXES = ("iteration", "env_steps")
#: Seconds between the writer's flushes to disk: soon enough to watch a run live.
FLUSH_SECONDS = 10


def require_tensorboard() -> None:
    """Refuse, with what to install, where the tensorboard package is missing: torch's
    SummaryWriter and Lightning's TensorBoardLogger both write through it."""
    try:
        import tensorboard  # noqa: F401
    except ImportError:
        raise TrainError("trainer.logger='tensorboard' needs the tensorboard package, which "
                         "is not installed here: `pip install tensorboard` (wd-teach's own "
                         "dependencies include it), or use logger='csv'.") from None


def tensorboard_folder(logger: str, out) -> Path | None:
    """The folder a run's event files go to (None for the csv logger), checked before the
    run starts: the logger's name, the package, and a run folder to write into."""
    if logger not in LOGGERS:
        raise TrainError(f"logger={logger!r}: choose one of {', '.join(LOGGERS)}.")
    if logger != "tensorboard":
        return None
    if out is None:
        raise TrainError("logger='tensorboard' writes its event files into the run's folder: "
                         "give one (train(out='runs/NAME') writes them to "
                         f"runs/NAME/{TENSORBOARD_FOLDER}/), or use logger='csv'.")
    require_tensorboard()
    return Path(out) / TENSORBOARD_FOLDER


class TensorBoardLog:
    """History rows as TensorBoard scalars, one event file per `train()` call (TensorBoard
    reads every event file of a folder as one run)."""

    def __init__(self, folder: str | Path):
        from torch.utils.tensorboard import SummaryWriter

        self.folder = Path(folder)
        self.writer = SummaryWriter(str(self.folder), flush_secs=FLUSH_SECONDS)

    def write(self, row: dict) -> None:
        """Every finite number of `row` at step `row['env_steps']`. NaN (no episode ended
        in the iteration) is left out, as the learning curves leave it out."""
        step = int(row["env_steps"])
        for key, value in row.items():
            if key not in AXES and isinstance(value, (int, float)) and math.isfinite(value):
                self.writer.add_scalar(key, value, step)

    def close(self) -> None:
        self.writer.close()


def open_log(logger: str, out) -> TensorBoardLog | None:
    """The writer a run's `trainer.logger` asks for, or None where the history is all."""
    folder = tensorboard_folder(logger, out)
    return None if folder is None else TensorBoardLog(folder)
