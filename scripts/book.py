"""The book: every notebook executed on this machine and rendered to HTML, an index page, and
the teacher's guide, so the course can be read without running it.

    python scripts/book.py                          # into build/book/
    python scripts/book.py --out DIR --jobs 2       # notebooks executed two at a time

On a CPU (CI) the notebooks run at small size on Numba's CUDA simulator, as nbval runs them.
Each is executed in a fresh kernel inside a copy of notebooks/ (so nothing is written beside
the sources); a cell that raises stops the build, naming the notebook and the cell. The
executed notebooks are kept in DIR/notebooks/ (tests/browser/test_book.py counts their
figures against the pages). Pages need nothing from the network but the Colab badge: images
are embedded, and the scripts the notebooks do not use (require.js, MathJax, mermaid) are
left out.
"""

from __future__ import annotations

import argparse
import html
import json
import multiprocessing
import os
import re
import shutil
import sys
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor
from datetime import date
from pathlib import Path

import nbformat
from colab_cells import repository  # scripts/ is on the path when this runs as a script
from jinja2 import DictLoader
from jupyter_client.manager import KernelManager
from nbclient import NotebookClient
from nbconvert import HTMLExporter
from nbconvert.filters.markdown_mistune import markdown2html_mistune

REPO = Path(__file__).resolve().parents[1]
NOTEBOOKS = REPO / "notebooks"

#: The lab template, less the scripts that load from a CDN, with a bar to move between pages.
PAGE_TEMPLATE = """\
{%- extends 'lab/index.html.j2' -%}
{%- block html_head_js_requirejs -%}{%- endblock -%}
{%- block html_head_js_mathjax -%}{%- endblock -%}
{%- block html_head_js_mermaidjs -%}{%- endblock -%}
{%- block extra_css -%}<style>{{ resources.book_css }}</style>{%- endblock -%}
{%- block body_header -%}{{ super() }}{{ resources.book_nav }}{%- endblock -%}
{%- block body_footer -%}{{ resources.book_nav }}{{ super() }}{%- endblock -%}
"""
CSS = """
nav.book { display: flex; gap: 1.5em; padding: 0.6em 1em; margin: 0 0 1em 0;
           background: #f3f5f8; border-bottom: 1px solid #d8dde4; font: 14px sans-serif; }
nav.book a { color: #1a5fb4; text-decoration: none; }
nav.book .spacer { flex: 1; }
"""
INDEX_CSS = """
body { font: 16px/1.5 sans-serif; max-width: 60em; margin: 2em auto; padding: 0 1em;
       color: #1e2329; }
a { color: #1a5fb4; }
.lesson { border-top: 1px solid #d8dde4; padding: 0.5em 0; }
.lesson h2 { font-size: 1.2em; margin: 0.5em 0 0.2em 0; }
.note { background: #f3f5f8; padding: 0.6em 1em; border-radius: 4px; }
table { border-collapse: collapse; }
th, td { border: 1px solid #d8dde4; padding: 0.2em 0.5em; vertical-align: top; }
a.anchor-link { display: none; }
"""


def notebooks() -> list[Path]:
    return sorted(NOTEBOOKS.glob("*.ipynb"))


def kernel_manager(sockets: str) -> KernelManager:
    """A kernel that talks over Unix sockets in the folder `sockets`, its own, where the OS
    has them. Over TCP, kernels started at once can race for a port (one picks a free
    port, another binds it before the first kernel does: "Address already in use", then
    "Kernel died before replying to kernel_info")."""
    if os.name != "posix":
        return KernelManager(kernel_name="python3")
    return KernelManager(kernel_name="python3", transport="ipc",
                         ip=os.path.join(sockets, "kernel"))


def execute(source: Path, workdir: Path, executed: Path) -> float:
    """Run one notebook top to bottom in a fresh kernel, in `workdir` (a copy of notebooks/);
    write it with its outputs to `executed`. Returns the seconds it took."""
    notebook = nbformat.read(source, as_version=4)
    start = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="wd-teach-kernel-") as sockets:
        NotebookClient(notebook, km=kernel_manager(sockets), timeout=1200,
                       kernel_name="python3", coalesce_streams=True,
                       resources={"metadata": {"path": str(workdir)}}).execute()
    seconds = time.perf_counter() - start
    nbformat.write(notebook, executed)
    return seconds


def execute_all(out: Path, jobs: int) -> dict[str, float]:
    """Execute every notebook into out/notebooks/, `jobs` at a time; seconds per notebook."""
    (out / "notebooks").mkdir(parents=True, exist_ok=True)
    # The kernels share the cores: each takes its share of torch's threads, not all of them.
    os.environ.setdefault("OMP_NUM_THREADS", str(max(1, (os.cpu_count() or 1) // jobs)))
    with tempfile.TemporaryDirectory(prefix="wd-teach-book-") as scratch:
        workdir = Path(scratch) / "notebooks"
        shutil.copytree(NOTEBOOKS, workdir)
        # spawn, not fork: this process has imported torch, whose threads a fork would copy
        with ProcessPoolExecutor(jobs, mp_context=multiprocessing.get_context("spawn")) as pool:
            runs = {path.stem: pool.submit(execute, path, workdir,
                                           out / "notebooks" / path.name)
                    for path in notebooks()}
            return {stem: run.result() for stem, run in runs.items()}


def title(notebook) -> str:
    """The notebook's heading: its first markdown cell that starts with '# '."""
    for cell in notebook.cells:
        if cell.cell_type == "markdown" and cell.source.startswith("# "):
            return cell.source.splitlines()[0][2:].strip()
    raise ValueError("a notebook without a '# ' title cell")


def lesson_plan(notebook) -> str:
    """The markdown of the notebook's lesson plan (objectives, prerequisites, time)."""
    return next((c.source for c in notebook.cells if c.get("id") == "lesson-plan"), "")


def nav(stems: list[str], i: int) -> str:
    """The bar at the top and bottom of page i: the index, the notebook, previous and next."""
    links = ['<a href="index.html">All lessons</a>',
             '<a href="teaching.html">Teacher\'s guide</a>',
             f'<a href="notebooks/{stems[i]}.ipynb">This notebook, run (.ipynb)</a>',
             '<span class="spacer"></span>']
    if i > 0:
        links.append(f'<a href="{stems[i - 1]}.html">&larr; {stems[i - 1]}</a>')
    if i + 1 < len(stems):
        links.append(f'<a href="{stems[i + 1]}.html">{stems[i + 1]} &rarr;</a>')
    return f'<nav class="book">{"".join(links)}</nav>'


def render_pages(out: Path) -> list:
    """One HTML page per executed notebook; returns the executed notebooks, in order."""
    exporter = HTMLExporter(template_name="lab", extra_loaders=[DictLoader(
        {"book.html.j2": PAGE_TEMPLATE})], template_file="book.html.j2")
    stems = [path.stem for path in notebooks()]
    executed = []
    for i, stem in enumerate(stems):
        notebook = nbformat.read(out / "notebooks" / f"{stem}.ipynb", as_version=4)
        notebook.metadata["title"] = title(notebook)
        page, _ = exporter.from_notebook_node(notebook, resources={
            "book_css": CSS, "book_nav": nav(stems, i)})
        (out / f"{stem}.html").write_text(page, encoding="utf-8")
        executed.append((stem, notebook))
    return executed


def standalone(heading: str, body: str, css: str = INDEX_CSS) -> str:
    return (f'<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
            f'<meta name="viewport" content="width=device-width, initial-scale=1.0">'
            f"<title>{html.escape(heading)}</title><style>{css}</style></head>"
            f"<body>{body}</body></html>\n")


def where_run() -> str:
    """Where the notebooks ran, for the index: a GPU at full size, or the CPU at small size."""
    import wd_teach  # here, not at the top: it decides between the GPU and the simulator

    if wd_teach.gpu_available():
        return f"on a GPU ({wd_teach.discover().gpu_name}), at full size"
    return ("on a CPU, at small size, with Numba's CUDA simulator standing in for the GPU: the "
            "code, the pictures and the checks are real, the speeds are not a GPU's")


def render_index(out: Path, executed: list) -> None:
    lessons = "".join(
        f'<div class="lesson"><h2><a href="{stem}.html">{html.escape(title(notebook))}</a>'
        f"</h2>{markdown2html_mistune(lesson_plan(notebook))}</div>"
        for stem, notebook in executed)
    body = (
        "<h1>wd-teach: end-to-end multi-agent RL on a GPU, one notebook at a time</h1>"
        '<p class="note">Every lesson below was executed top to bottom on '
        f"{date.today():%Y-%m-%d} {html.escape(where_run())}. To run the lessons, open them "
        "on Colab from the badge at the top of each page, or clone "
        f'<a href="{html.escape(repository())}">the repository</a>. '
        'For teachers: <a href="teaching.html">the teacher\'s guide</a>.</p>'
        f"{lessons}")
    (out / "index.html").write_text(standalone("wd-teach: the lessons", body), "utf-8")


def render_guide(out: Path) -> None:
    """docs/teaching.md as a page: notebook links to their pages, other files to GitHub."""
    text = (REPO / "docs" / "teaching.md").read_text(encoding="utf-8")
    text = re.sub(r"\]\(\.\./notebooks/(\w+)\.ipynb\)", r"](\1.html)", text)
    blob = f"{repository().removesuffix('/')}/blob/main/"
    text = re.sub(r"\]\(\.\./([^)]+)\)", lambda m: f"]({blob}{m.group(1)})", text)
    body = '<p><a href="index.html">All lessons</a></p>' + markdown2html_mistune(text)
    (out / "teaching.html").write_text(standalone("Teaching with wd-teach", body), "utf-8")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=REPO / "build" / "book")
    parser.add_argument("--jobs", type=int, default=1, help="notebooks executed at once")
    args = parser.parse_args(argv)
    if args.jobs < 1:
        parser.error(f"--jobs {args.jobs}: give 1 or more")
    if args.out.exists():
        shutil.rmtree(args.out)
    start = time.perf_counter()
    seconds = execute_all(args.out, args.jobs)
    executed = render_pages(args.out)
    render_index(args.out, executed)
    render_guide(args.out)
    (args.out / "timings.json").write_text(json.dumps(seconds, indent=1) + "\n")
    for stem, took in seconds.items():
        print(f"{took:7.1f} s  {stem}")
    print(f"{time.perf_counter() - start:7.1f} s  in all: {args.out / 'index.html'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
