"""Run lessons top to bottom on a GPU machine and save them with their outputs.

    python scripts/gpu_outputs.py notebooks/10_gpu_fundamentals.ipynb --out artifacts/outputs
    python scripts/gpu_outputs.py notebooks/*.ipynb --out artifacts/outputs --backend numba

Each notebook runs in a fresh kernel at full size (WD_TEACH_SIZES is left unset, so
`lesson_sizes()` picks the GPU's sizes) on the backend named, and is written to --out with
every cell's outputs and, in its metadata under `wd_teach.outputs`, the GPU, the versions of
torch, numba-cuda and PyCUDA, the backend, the date and a short hash of each code cell's
source: a reader on GitHub or in the book then sees the numbers of a real run, and knows
where they came from, and a test sees when a cell changed after that run. The run's time,
in words, goes where the lesson's GPU time is said: its metadata, its lesson plan and its row
of the teacher's guide, a copy of docs/teaching.md written to --out beside the notebooks
(copy it over docs/teaching.md with them). nbval still runs the saved notebooks on a CPU,
where outputs that vary are not compared (--nbval-lax).
"""

from __future__ import annotations

import argparse
import base64
import datetime
import hashlib
import io
import json
import os
import re
import shutil
import sys
import time
from importlib import metadata
from pathlib import Path

import nbformat
from colab_cells import notebook_text  # scripts/, beside this file
from lesson_times import TEACHING, say_gpu_time
from nbclient import NotebookClient


def version(package: str) -> str | None:
    """The installed version; for a package unpacked without its metadata (a GPU kit's
    PyCUDA), the module's own version text."""
    try:
        return metadata.version(package)
    except metadata.PackageNotFoundError:
        try:
            module = __import__(package.replace("-", "_"))
        except ImportError:
            return None
        return getattr(module, "VERSION_TEXT", None) or getattr(module, "__version__", None)


def provenance(backend: str) -> dict:
    """Where and with what a notebook's outputs were made."""
    import torch

    if not torch.cuda.is_available():
        sys.exit("gpu_outputs: torch sees no CUDA GPU here; saved outputs come from a GPU run.")
    return {"gpu": torch.cuda.get_device_name(0), "backend": backend,
            "torch": torch.__version__, "numba_cuda": version("numba-cuda"),
            "pycuda": version("pycuda"), "date": datetime.date.today().isoformat()}


#: A frame of an animation as matplotlib's to_jshtml embeds it.
FRAME = re.compile(r'data:image/png;base64,([A-Za-z0-9+/=\\\n]+)"')


def shrink_animations(notebook, quality: int = 80) -> int:
    """Store the frames of every embedded animation (matplotlib's to_jshtml: one PNG per
    frame) as JPEG: a Tag game's 121 frames go from about 4.5 MB to under 1 MB, the same
    pictures, so the lessons stay small enough to read on GitHub and to carry. The bytes
    saved."""
    from PIL import Image

    def jpeg(match: re.Match) -> str:
        png = base64.b64decode(match.group(1))  # the escaped line breaks are not base64: dropped
        buffer = io.BytesIO()
        Image.open(io.BytesIO(png)).convert("RGB").save(buffer, "JPEG", quality=quality)
        return f'data:image/jpeg;base64,{base64.b64encode(buffer.getvalue()).decode()}"'

    saved = 0
    for cell in notebook.cells:
        for output in cell.get("outputs", []):
            html = output.get("data", {}).get("text/html")
            if not html or "data:image/png;base64" not in html:
                continue
            smaller = FRAME.sub(jpeg, html)
            saved += len(html) - len(smaller)
            output["data"]["text/html"] = smaller
    return saved


def code_stamps(notebook) -> list[str]:
    """A short hash of each code cell's source, in order: saved with the outputs, so a test
    (tests/test_saved_outputs.py) can tell when a cell was changed after the run that made
    its outputs, and the outputs a reader sees no longer come from the code above them."""
    return [hashlib.sha256("".join(cell.source).encode()).hexdigest()[:12]
            for cell in notebook.cells if cell.cell_type == "code"]


def run(path: Path, out: Path, backend: str, cell_timeout: int) -> float:
    """Execute `path` in a fresh kernel and write it to `out`; the seconds it took."""
    notebook = nbformat.read(path, as_version=4)
    start = time.perf_counter()
    NotebookClient(notebook, timeout=cell_timeout, kernel_name="python3",
                   resources={"metadata": {"path": str(path.parent)}}).execute()
    seconds = time.perf_counter() - start
    shrink_animations(notebook)
    notebook.metadata.setdefault("wd_teach", {})["outputs"] = {
        **provenance(backend), "seconds": round(seconds), "code_cells": code_stamps(notebook)}
    # the new time in words: the notebook's metadata and lesson plan, and its row of the
    # guide, a copy of docs/teaching.md beside the notebooks written (a finished run is
    # saved even where the words cannot be placed)
    out.parent.mkdir(parents=True, exist_ok=True)
    guide = out.parent / TEACHING.name
    if not guide.exists():
        shutil.copyfile(TEACHING, guide)
    try:
        say_gpu_time(notebook, path.stem, round(seconds), guide)
    except ValueError as error:
        print(f"{path.name}: its GPU time is not said in words: {error}", file=sys.stderr)
    nbformat.write(notebook, out)
    # as every notebook in the repo is written (scripts/colab_cells.py), so a diff shows outputs
    out.write_text(notebook_text(json.loads(out.read_text(encoding="utf-8"))), encoding="utf-8")
    return seconds


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("notebooks", nargs="+", type=Path)
    parser.add_argument("--out", type=Path, required=True, help="folder for the saved notebooks")
    parser.add_argument("--backend", default="pycuda", choices=["pycuda", "numba"])
    parser.add_argument("--cell-timeout", type=int, default=600)
    args = parser.parse_args(argv)
    os.environ["WD_TEACH_BACKEND"] = args.backend
    provenance(args.backend)  # no GPU: stop before running anything
    failed = 0
    for path in args.notebooks:
        try:
            seconds = run(path, args.out / path.name, args.backend, args.cell_timeout)
            print(f"{path.name}: saved with outputs, {seconds:.0f} s", flush=True)
        except Exception as error:  # noqa: BLE001 - report each notebook and go on
            failed += 1
            print(f"{path.name}: FAILED: {type(error).__name__}: {str(error)[-400:]}",
                  flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
