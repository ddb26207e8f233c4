"""The book: every lesson, the teacher's guide, docs/architecture.md and README's sections as
a Jupyter Book 2 (MyST) site in one folder: a table of contents on every page, full-text
search, and the lessons linked wherever one names another, so the course can be read without
running it.

    python scripts/book.py                          # into build/book/
    python scripts/book.py --out DIR
    BOOK_EXECUTE=1 python scripts/book.py --jobs 2  # run every notebook here first

How: the pages' sources are staged in build/book-src/ (copies: the notebooks and documents
themselves are not changed), with lessons linked where their text names another lesson
("lesson 03", "03_sampler"), the Colab badge as a text link (offline, a picture from the
network would be broken), README cut into one page per '## ' section, and a myst.yml that
lists them all; then `jupyter book build --html` renders them into DIR.

Nothing is executed by default: the book shows the outputs saved in the notebooks (run on a
GPU and saved, say), and a cell never run shows its code alone; the build prints how many
code cells of each notebook carry outputs and figures. BOOK_EXECUTE=1 first runs every
notebook here (on a CPU: small sizes, Numba's CUDA simulator), each in a fresh kernel, and
renders those runs. The notebooks the pages were made from are kept in DIR/notebooks/ and
DIR/pages.json maps each source to its page (tests/browser/test_book.py reads both).

The site theme is docs/book-theme/ (MyST's book theme, kept as source): its npm packages are
installed (`npm ci`, from its package-lock.json) and it is built the first time, and again
whenever its sources change. Jupyter Book would otherwise download a built theme from
outside the package registries. The site needs a web server, as any Jupyter Book 2 site does
(its links start at the site's root, and pages fetch their content and the search index as
JSON): `python -m http.server -d build/book` serves it on a machine without network, and
BASE_URL=/wd-teach builds it for a sub-path (GitHub Pages).
"""

from __future__ import annotations

import argparse
import base64
import io
import json
import multiprocessing
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import nbformat
from colab_cells import repository  # scripts/ is on the path when this runs as a script
from jupyter_client.manager import KernelManager
from nbclient import NotebookClient

REPO = Path(__file__).resolve().parents[1]
NOTEBOOKS = REPO / "notebooks"
THEME = REPO / "docs" / "book-theme"
#: The documents that become pages: repository path -> page source in the staged book.
DOCUMENTS = {"docs/teaching.md": "teaching.md", "docs/architecture.md": "architecture.md"}


def notebooks() -> list[Path]:
    return sorted(NOTEBOOKS.glob("*.ipynb"))


def execute_switch() -> bool:
    """BOOK_EXECUTE: 0 (the default) shows the saved outputs; 1 runs every notebook first."""
    value = os.environ.get("BOOK_EXECUTE", "0").strip()
    if value not in ("0", "1"):
        raise SystemExit(f"BOOK_EXECUTE={value!r}: give 0 (show the outputs saved in the "
                         "notebooks, the default) or 1 (run every notebook here first)")
    return value == "1"


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


def execute_all(into: Path, jobs: int) -> dict[str, float]:
    """Execute every notebook into the folder `into`, `jobs` at a time; seconds per notebook."""
    # The kernels share the cores: each takes its share of torch's threads, not all of them.
    os.environ.setdefault("OMP_NUM_THREADS", str(max(1, (os.cpu_count() or 1) // jobs)))
    with tempfile.TemporaryDirectory(prefix="wd-teach-book-") as scratch:
        workdir = Path(scratch) / "notebooks"
        shutil.copytree(NOTEBOOKS, workdir)
        # spawn, not fork: this process has imported torch, whose threads a fork would copy
        with ProcessPoolExecutor(jobs, mp_context=multiprocessing.get_context("spawn")) as pool:
            runs = {path.stem: pool.submit(execute, path, workdir,
                                           into / path.name)
                    for path in notebooks()}
            return {stem: run.result() for stem, run in runs.items()}


def title(notebook) -> str:
    """The notebook's heading: its first markdown cell that starts with '# '."""
    for cell in notebook.cells:
        if cell.cell_type == "markdown" and cell.source.startswith("# "):
            return cell.source.splitlines()[0][2:].strip()
    raise ValueError("a notebook without a '# ' title cell")


# ---- what the pages are made from: markdown, rewritten for the book ------------------------

#: Code in markdown (fenced blocks and `spans`): never rewritten.
CODE = re.compile(r"(```.*?```|`[^`\n]*`)", re.DOTALL)
#: "lesson 03", "notebook 02", "lessons 01 to 03", "Notebooks 01 and 02".
NAMED_BY_NUMBER = re.compile(
    r"\b([Ll]essons?|[Nn]otebooks?) (\d\d)((?:(?:, | and | to | or )\d\d)*)\b(?![\]\w])")
#: "03_sampler", not inside a path or a link.
NAMED_BY_STEM = re.compile(r"(?<![/\w\[(])(\d\d_[a-z0-9_]+)\b(?![\]\w.]|\.ipynb)")
#: A markdown image from the network, alone or as a link's text: [![alt](src)](href).
REMOTE_IMAGE = re.compile(r"(\[)?!\[([^\]]*)\]\((https?://[^)\s]+)\)(?:\]\(([^)\s]+)\))?")


def outside_code(text: str, change) -> str:
    """`change` applied to the markdown `text` everywhere but in its code."""
    parts = CODE.split(text)
    return "".join(part if i % 2 else change(part) for i, part in enumerate(parts))


def link_lessons(text: str, stems: list[str], here: str = "") -> str:
    """Every lesson a text names ("lesson 03", "notebooks 01 and 02", "03_sampler") becomes a
    link to its page: the cross-references between lessons, made from how they already talk."""
    by_number = {stem[:2]: stem for stem in stems}

    def numbers(match):
        found = [match.group(2)] + re.findall(r"\d\d", match.group(3))
        if not all(n in by_number for n in found) or by_number.get(found[0]) == here:
            return match.group(0)
        if len(found) == 1:
            return f"[{match.group(0)}]({by_number[found[0]]}.ipynb)"
        return f"{match.group(1)} " + re.sub(
            r"\d\d", lambda n: f"[{n.group(0)}]({by_number[n.group(0)]}.ipynb)",
            match.group(0)[len(match.group(1)) + 1:])

    def stem(match):
        name = match.group(1)
        return f"[{name}]({name}.ipynb)" if name in stems and name != here else name

    return outside_code(text, lambda part: NAMED_BY_STEM.sub(stem, NAMED_BY_NUMBER.sub(
        numbers, part)))


def unbadge(text: str) -> str:
    """Images from the network (the Colab badge) as text links: offline, an image from the
    network is a broken picture, and its words still say where the link goes."""
    def link(match):
        alt = match.group(2).strip() or "image"
        if match.group(1) and match.group(4):
            return f"[{alt} ↗]({match.group(4)})"
        return f"{match.group(1) or ''}[{alt} ↗]({match.group(3)})"

    return REMOTE_IMAGE.sub(link, text)


def slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces as dashes."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def readme_sections() -> list[tuple[str, str, str]]:
    """README.md cut at its '## ' headings: (page, title, markdown) each, the opening first."""
    sections, lines, name, heading, fenced = [], [], "readme.md", "wd-teach", False
    for line in (REPO / "README.md").read_text(encoding="utf-8").splitlines():
        fenced ^= line.startswith("```")
        if line.startswith("## ") and not fenced:
            sections.append((name, heading, "\n".join(lines)))
            heading = line[3:].strip()
            name, lines = f"readme-{slug(heading)}.md", [f"# {heading}"]
        else:
            lines.append(line)
    sections.append((name, heading, "\n".join(lines)))
    return sections


def relink_document(text: str, source: str, stems: list[str], readme_pages: dict) -> str:
    """A document's links, for the book: to a notebook, a document that is a page or a README
    section, that page; to another file of the repository, the file on GitHub."""
    blob = f"{repository().removesuffix('/')}/blob/main/"
    folder = Path(source).parent

    def target(match):
        href = match.group(1)
        if re.match(r"[a-z]+:", href):
            return match.group(0)
        path, _, anchor = href.partition("#")
        if not path:  # an anchor in README: the section's page
            page = readme_pages.get(anchor) if source == "README.md" else None
            return f"]({page})" if page else match.group(0)
        where = os.path.normpath(folder / path).replace(os.sep, "/")
        if where.startswith("notebooks/") and Path(where).stem in stems:
            return f"]({Path(where).stem}.ipynb)"
        if where in DOCUMENTS:
            return f"]({DOCUMENTS[where]}{'#' + anchor if anchor else ''})"
        if where == "README.md":
            return f"]({readme_pages.get(anchor, 'readme.md')})"
        return f"]({blob}{where}{'#' + anchor if anchor else ''})"

    return re.sub(r"\]\(([^)\s]+)\)", target, text)


# ---- the staged sources and the build ------------------------------------------------------


#: An animation's frames and interval as matplotlib's to_jshtml embeds them.
FRAME = re.compile(r'data:image/(?:png|jpeg);base64,([A-Za-z0-9+/=\\\n]+)"')
INTERVAL = re.compile(r"new Animation\(frames,\s*'[^']*',\s*'[^']*',\s*([\d.]+)")


def as_gif(html: str) -> str | None:
    """An embedded animation (to_jshtml) as one animated GIF of the same frames, base64; None
    for other HTML. The theme renders HTML outputs through thebe, which fetches MathJax and
    the animation's Font Awesome icons from CDNs: a GIF is drawn with nothing fetched."""
    from PIL import Image

    frames = [Image.open(io.BytesIO(base64.b64decode(data))).convert("RGB")
              for data in FRAME.findall(html)]
    if len(frames) < 2:
        return None
    interval = INTERVAL.search(html)
    buffer = io.BytesIO()
    frames[0].save(buffer, "GIF", save_all=True, append_images=frames[1:], loop=0,
                   duration=int(float(interval.group(1))) if interval else 100)
    return base64.b64encode(buffer.getvalue()).decode()


def offline_outputs(cells: list) -> list:
    """Outputs the book draws without thebe (which would fetch from CDNs): an animation
    becomes an animated GIF, a displayed Markdown text (09's tables) a markdown cell of its
    own after its code cell, which MyST renders as it renders the lesson's text, and other
    HTML (08's model summary) its plain text."""
    staged = []
    for cell in cells:
        staged.append(cell)
        if cell.cell_type != "code":
            continue
        kept = []
        for output in cell.get("outputs", []):
            data = output.get("data", {})
            if "text/markdown" in data:
                staged.append(nbformat.v4.new_markdown_cell(data["text/markdown"]))
                continue
            gif = as_gif(data["text/html"]) if "text/html" in data else None
            if gif:
                output["data"] = {"image/gif": gif, "text/plain": "<an animation>"}
            elif "text/html" in data and "text/plain" in data:  # e.g. a table: as text
                output["data"] = {k: v for k, v in data.items() if k != "text/html"}
            kept.append(output)
        cell["outputs"] = kept
    return staged


def for_the_book(notebook, stems: list[str], here: str):
    """The notebook's markdown with lessons linked and badges as text (a copy is changed)."""
    notebook = nbformat.from_dict(json.loads(json.dumps(notebook)))
    for cell in notebook.cells:
        if cell.cell_type == "markdown":
            cell.source = link_lessons(unbadge(cell.source), stems, here)
    notebook.cells = offline_outputs(notebook.cells)
    # The title first, the Colab link under it: MyST takes a page's first heading as its title.
    cells = notebook.cells
    if len(cells) > 1 and cells[0].get("id") == "colab-badge" and cells[1].source.startswith("# "):
        cells[0], cells[1] = cells[1], cells[0]
    # Cell ids are the page's anchors, which MyST wants unique across the book: "colab-setup"
    # is in every lesson.
    for cell in cells:
        if cell.get("id"):
            cell["id"] = f"{here}-{cell['id']}"[:64]
    return notebook


def saved_outputs(notebook) -> str:
    """What a notebook carries: how many code cells ran, and how many figures it saved."""
    code = [cell for cell in notebook.cells if cell.cell_type == "code" and cell.source.strip()]
    ran = sum(cell.get("execution_count") is not None for cell in code)
    figures = sum(any(kind.startswith("image/") for kind in output.get("data", {}))
                  for cell in code for output in cell.get("outputs", []))
    return f"{ran:3d} of {len(code):3d} code cells run, {figures:2d} figures"


def stage_documents(src: Path, stems: list[str]) -> list[tuple[str, str]]:
    """The teacher's guide, docs/architecture.md and README's sections into `src`, relinked
    for the book; returns (page source, title) for README's pages, the opening first."""
    readme = readme_sections()
    readme_pages = {slug(heading): page for page, heading, _ in readme[1:]}
    pages = [(source, page, (REPO / source).read_text(encoding="utf-8"))
             for source, page in DOCUMENTS.items()]
    pages += [("README.md", page, text) for page, _, text in readme]
    for source, page, text in pages:
        text = link_lessons(unbadge(relink_document(text, source, stems, readme_pages)), stems)
        (src / page).write_text(text, encoding="utf-8")
    return [(page, heading) for page, heading, _ in readme]


def myst_yml(stems: list[str], readme: list[tuple[str, str]]) -> str:
    """The book's configuration: its table of contents and the local theme."""
    # The lessons at the top level: a group's pages are listed only while it is open.
    lessons = "".join(f"    - file: {stem}.ipynb\n" for stem in stems)
    sections = "".join(f"        - file: {page}\n" for page, _ in readme[1:])
    return f"""\
# Written by scripts/book.py: edit it there.
version: 1
project:
  title: "wd-teach: the book"
  github: {repository()}
  toc:
    - file: teaching.md
{lessons}    - file: architecture.md
    - file: {readme[0][0]}
      children:
{sections}site:
  template: {THEME / "template.yml"}
  options:
    favicon: {THEME / "favicon.svg"}
    logo_text: wd-teach
    folders: false
"""


def theme_stale() -> bool:
    """Whether docs/book-theme/ must be (re)built: no build yet, or a source newer than it."""
    built = THEME / "build" / "index.js"
    if not built.exists():
        return True
    sources = [THEME / name for name in ("package.json", "package-lock.json", "remix.config.js",
                                         "tailwind.config.js", "postcss.config.js")]
    sources += [*(THEME / "app").rglob("*.ts*"), *(THEME / "styles").glob("*.css")]
    return max(path.stat().st_mtime for path in sources) > built.stat().st_mtime


def serve_fonts_from_the_site(out: Path) -> None:
    """The static export moves the theme's assets from the theme server's /myst_assets_folder/
    to /build/ and rewrites the pages and scripts, but not the stylesheets: KaTeX's fonts
    (the math of lesson 07) would be asked for where nothing is."""
    for sheet in (out / "build").rglob("*.css"):
        text = sheet.read_text(encoding="utf-8")
        if "/myst_assets_folder/" in text:
            sheet.write_text(text.replace("/myst_assets_folder/", "/build/"), encoding="utf-8")


def build_theme() -> None:
    """The site theme's packages from npm and its build, where missing or out of date."""
    npm = shutil.which("npm")
    if npm is None:
        raise SystemExit("npm is not installed: the book's theme is built with it "
                         "(apt-get install -y nodejs npm, or Node.js 20 or newer from nodejs.org)")
    if not (THEME / "node_modules").is_dir():
        subprocess.run([npm, "ci", "--ignore-scripts", "--no-audit", "--no-fund"],
                       cwd=THEME, check=True)
    if theme_stale():
        subprocess.run([npm, "run", "build"], cwd=THEME, check=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=REPO / "build" / "book")
    parser.add_argument("--jobs", type=int, default=1,
                        help="notebooks executed at once (with BOOK_EXECUTE=1)")
    args = parser.parse_args(argv)
    if args.jobs < 1:
        parser.error(f"--jobs {args.jobs}: give 1 or more")
    run_here = execute_switch()
    start = time.perf_counter()
    build_theme()
    theme_seconds = time.perf_counter() - start
    src = REPO / "build" / "book-src"
    shutil.rmtree(src, ignore_errors=True)
    (src / "notebooks").mkdir(parents=True)
    stems = [path.stem for path in notebooks()]
    seconds = execute_all(src / "notebooks", args.jobs) if run_here else {}
    for path in notebooks():
        if not run_here:
            shutil.copy(path, src / "notebooks" / path.name)
        notebook = nbformat.read(src / "notebooks" / path.name, as_version=4)
        print(f"{path.stem:22s} {saved_outputs(notebook)}")
        nbformat.write(for_the_book(notebook, stems, path.stem), src / path.name)
    readme = stage_documents(src, stems)
    (src / "myst.yml").write_text(myst_yml(stems, readme), encoding="utf-8")
    built = time.perf_counter()
    subprocess.run([sys.executable, "-m", "jupyter_book", "build", "--html"], cwd=src,
                   check=True, env={**os.environ, "JB_ALLOW_NODEENV": "no"})
    if args.out.exists():
        shutil.rmtree(args.out)
    shutil.copytree(src / "_build" / "html", args.out)
    shutil.copytree(src / "notebooks", args.out / "notebooks")
    serve_fonts_from_the_site(args.out)
    pages = {}  # each page's source -> its address under DIR (slug/index.html; "index" is /)
    for page in args.out.glob("*.json"):
        content = json.loads(page.read_text(encoding="utf-8"))
        if isinstance(content, dict) and "location" in content and "mdast" in content:
            pages[content["location"].lstrip("/")] = content["slug"]
    (args.out / "pages.json").write_text(json.dumps(pages, indent=1, sort_keys=True) + "\n")
    for stem, took in seconds.items():
        print(f"{took:7.1f} s  {stem}")
    print(f"{theme_seconds:7.1f} s  the theme (npm ci and build, where needed)")
    print(f"{time.perf_counter() - built:7.1f} s  jupyter book build --html")
    print(f"{time.perf_counter() - start:7.1f} s  in all: {args.out}; serve it with "
          f"`python -m http.server -d {args.out}`")
    return 0


if __name__ == "__main__":
    sys.exit(main())
