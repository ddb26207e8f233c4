"""A recorded game as a video file, for `wd-teach play`.

The env draws its own frames (Env.draw_frame: Tag's is the drawing the lessons animate), on
a matplotlib figure that is never shown; this module turns each drawing into a picture and
writes the pictures out:

    mp4   through imageio-ffmpeg (imageio's ffmpeg package, which ships ffmpeg in its
          wheel: the [video] extra, `pip install "wd-teach[video]"`), where it is installed
    gif   through Pillow, which matplotlib needs and so is always here

    path = video_path(None, "runs/cartpole/play")     # .mp4 where it can be, else .gif
    check_video_path(path)                            # before any work
    write_video(env, evaluation.frames, path)
"""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path

import numpy as np

from wd_teach.env import Env
from wd_teach.errors import TrainError
from wd_teach.files import atomic_write

MP4, GIF = ".mp4", ".gif"
#: Frames per second of a video: a Tag step or a CartPole step is easy to follow at this pace.
FPS = 8
#: The picture's size in inches and dots per inch: 480 x 480 pixels, a multiple of the 16
#: that video encoders work in, so no frame is resized.
SIZE, DPI = 5, 96


def draws(env: Env) -> bool:
    """Whether `env` draws its games (its class gives Env.draw_frame a body)."""
    return type(env).draw_frame is not Env.draw_frame


def mp4_encoder() -> bool:
    """Whether imageio-ffmpeg is installed: then videos are mp4."""
    return importlib.util.find_spec("imageio_ffmpeg") is not None


def video_path(path: str | Path | None, default: str | Path) -> Path:
    """The file to write: `path` as given, or `default` with .mp4 where an encoder is
    installed, else .gif."""
    if path is not None:
        return Path(path)
    return Path(default).with_suffix(MP4 if mp4_encoder() else GIF)


def check_video_path(path: Path) -> None:
    """Refuse, before any game is played, a video that cannot be written: another suffix
    than .mp4 or .gif, an mp4 without its encoder, a folder, a place this user may not
    write to."""
    if path.suffix.lower() not in (MP4, GIF):
        raise TrainError(f"--video {path}: a video is written as .mp4 or .gif; give a name "
                         "ending in one of them.")
    if path.suffix.lower() == MP4 and not mp4_encoder():
        raise TrainError(f"--video {path}: an mp4 needs imageio-ffmpeg, which is not "
                         "installed here. Install it (`pip install \"wd-teach[video]\"`) "
                         "or give a .gif name.")
    if path.is_dir():
        raise TrainError(f"--video {path} is a folder; give the video file's name, e.g. "
                         f"{path / 'play'}{GIF}.")
    folder = next(p for p in path.parents if p.exists())
    if not folder.is_dir() or not os.access(folder, os.W_OK | os.X_OK) or (
            path.exists() and not os.access(path, os.W_OK)):
        raise TrainError(f"--video {path}: {folder} cannot be written by this user. Give a "
                         "path you may write to.")


def frame_pictures(env: Env, frames: dict[str, np.ndarray]) -> list[np.ndarray]:
    """Each recorded step drawn by the env, as an RGB picture [height, width, 3] uint8.
    A figure of its own, off screen (no pyplot): the notebook's figures are not touched."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    figure = Figure(figsize=(SIZE, SIZE), dpi=DPI)
    canvas = FigureCanvasAgg(figure)
    ax = figure.add_subplot()
    pictures = []
    for k in range(len(next(iter(frames.values())))):
        env.draw_frame(ax, frames, k)
        canvas.draw()
        pictures.append(np.asarray(canvas.buffer_rgba())[..., :3].copy())
    return pictures


def write_video(env: Env, frames: dict[str, np.ndarray], path: str | Path,
                fps: int = FPS) -> Path:
    """Write the recorded game `frames` (Evaluation.frames) as drawn by `env` to `path`
    (.mp4 or .gif, see check_video_path), whole or not at all."""
    path = Path(path)
    check_video_path(path)
    if not draws(env):
        raise TrainError(f"{type(env).__name__} does not draw its games (it has no "
                         "draw_frame method), so there is no video to write.")
    pictures = frame_pictures(env, frames)
    with atomic_write(path) as temporary:
        if path.suffix.lower() == MP4:
            _write_mp4(pictures, temporary, fps)
        else:
            from PIL import Image

            first, *rest = [Image.fromarray(p) for p in pictures]
            first.save(temporary, format="GIF", save_all=True, append_images=rest,
                       duration=round(1000 / fps), loop=0)
    return path


def _write_mp4(pictures: list[np.ndarray], path: Path, fps: int) -> None:
    """H.264 through the ffmpeg of imageio-ffmpeg, one picture at a time. "-f mp4": ffmpeg
    would otherwise guess the container from the name, and the atomic write's temporary
    name ends in .tmp."""
    import imageio_ffmpeg

    height, width, _ = pictures[0].shape
    writer = imageio_ffmpeg.write_frames(str(path), (width, height), fps=fps,
                                         macro_block_size=16, output_params=["-f", "mp4"])
    writer.send(None)  # start ffmpeg
    for picture in pictures:
        writer.send(np.ascontiguousarray(picture))
    writer.close()
