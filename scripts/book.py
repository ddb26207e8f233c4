"""The book: every lesson, the teacher's guide, docs/architecture.md and README's sections as
static HTML pages in one folder, with a table of contents and a search box on every page and
the lessons linked wherever one names another, so the course can be read without running it.

    python scripts/book.py                          # into build/book/
    python scripts/book.py --out DIR --jobs 2       # notebooks executed two at a time
    BOOK_EXECUTE=0 python scripts/book.py           # the outputs saved in the notebooks

By default every notebook is executed here first: on a CPU (CI) at small size on Numba's
CUDA simulator, as nbval runs them, each in a fresh kernel inside a copy of notebooks/ (so
nothing is written beside the sources); a cell that raises stops the build, naming the
notebook and the cell. With BOOK_EXECUTE=0 nothing runs: the book shows the outputs saved in
the notebooks (run on a GPU, say), and a notebook with a cell never run stops the build. The
notebooks the pages were made from are kept in DIR/notebooks/ (tests/browser/test_book.py
counts their figures against the pages).

Every page reads offline, opened from disk (file://) as well as served: images are embedded,
a remote image (the Colab badge) becomes a text link, the scripts the notebooks do not use
(require.js, MathJax, mermaid) are left out, and the search index is a script file beside the
pages (browsers refuse fetch() from file://). The notebooks themselves are not changed: links
and badges are rewritten in the copies the pages are made from.

Why not Jupyter Book 2 (MyST): its command line downloads the site theme at build time from
outside the package registries (no npm or PyPI package ships the built theme), which CI and a
room without the internet cannot reach, and the site it makes needs a web server (absolute
links, search fetched as JSON), so a copy opened from disk would not work.
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
from html.parser import HTMLParser
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
ASSETS = Path(__file__).resolve().parent / "book_assets"
#: The documents that become pages, by repository path: page name and title.
DOCUMENTS = {"docs/teaching.md": ("teaching.html", None),
             "docs/architecture.md": ("architecture.html", None)}

#: The lab template, less the scripts that load from a CDN, with the table of contents and
#: search on the left and a bar to move between lessons.
PAGE_TEMPLATE = """\
{%- extends 'lab/index.html.j2' -%}
{%- block html_head_js_requirejs -%}{%- endblock -%}
{%- block html_head_js_mathjax -%}{%- endblock -%}
{%- block html_head_js_mermaidjs -%}{%- endblock -%}
{%- block extra_css -%}{{ resources.book_head }}{%- endblock -%}
{%- block body_header -%}
{{ super() }}{{ resources.book_side }}{{ resources.book_nav }}
{%- endblock -%}
{%- block body_footer -%}{{ resources.book_nav }}{{ super() }}{%- endblock -%}
"""
#: What every page loads from the book's own folder.
HEAD = ('<link rel="stylesheet" href="_static/book.css">'
        '<script src="_static/search-index.js"></script><script src="_static/search.js"></script>')
DOC_CSS = """
body { font: 16px/1.5 sans-serif; max-width: 60em; margin: 2em auto; padding: 0 1em;
       color: #1e2329; }
a { color: #1a5fb4; }
.lesson { border-top: 1px solid #d8dde4; padding: 0.5em 0; }
.lesson h2 { font-size: 1.2em; margin: 0.5em 0 0.2em 0; }
.note { background: #f3f5f8; padding: 0.6em 1em; border-radius: 4px; }
table { border-collapse: collapse; }
th, td { border: 1px solid #d8dde4; padding: 0.2em 0.5em; vertical-align: top; }
pre { background: #f6f8fa; padding: 0.6em; overflow-x: auto; }
a.anchor-link { display: none; }
"""


def notebooks() -> list[Path]:
    return sorted(NOTEBOOKS.glob("*.ipynb"))


def execute_switch() -> bool:
    """BOOK_EXECUTE: 1 (the default) runs every notebook for the book; 0 uses saved outputs."""
    value = os.environ.get("BOOK_EXECUTE", "1").strip()
    if value not in ("0", "1"):
        raise SystemExit(f"BOOK_EXECUTE={value!r}: give 1 (run every notebook for the book, "
                         "the default) or 0 (use the outputs saved in the notebooks)")
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


def copy_saved(out: Path) -> dict[str, float]:
    """BOOK_EXECUTE=0: the notebooks as saved, into out/notebooks/; each must have been run."""
    (out / "notebooks").mkdir(parents=True, exist_ok=True)
    for path in notebooks():
        notebook = nbformat.read(path, as_version=4)
        never_run = [i for i, cell in enumerate(notebook.cells)
                     if cell.cell_type == "code" and cell.source.strip()
                     and cell.get("execution_count") is None]
        if never_run:
            raise SystemExit(
                f"{path.name}: code cell {never_run[0]} (of {len(never_run)}) was never run, so "
                "BOOK_EXECUTE=0 has no output to show: run the notebook top to bottom and save "
                "it, or build with BOOK_EXECUTE=1 to run every notebook here")
        shutil.copy(path, out / "notebooks" / path.name)
    return {}


def title(notebook) -> str:
    """The notebook's heading: its first markdown cell that starts with '# '."""
    for cell in notebook.cells:
        if cell.cell_type == "markdown" and cell.source.startswith("# "):
            return cell.source.splitlines()[0][2:].strip()
    raise ValueError("a notebook without a '# ' title cell")


def lesson_plan(notebook) -> str:
    """The markdown of the notebook's lesson plan (objectives, prerequisites, time)."""
    return next((c.source for c in notebook.cells if c.get("id") == "lesson-plan"), "")




def where_run(executed_here: bool) -> str:
    """Where the notebooks ran, for the index: a GPU at full size, or the CPU at small size."""
    if not executed_here:
        return "with the outputs saved in the notebooks"
    import wd_teach  # here, not at the top: it decides between the GPU and the simulator

    when = f"executed top to bottom on {date.today():%Y-%m-%d} "
    if wd_teach.gpu_available():
        return when + f"on a GPU ({wd_teach.discover().gpu_name}), at full size"
    return when + ("on a CPU, at small size, with Numba's CUDA simulator standing in for the "
                   "GPU: the code, the pictures and the checks are real, the speeds are not a "
                   "GPU's")


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
            return f"[{match.group(0)}]({by_number[found[0]]}.html)"
        return f"{match.group(1)} " + re.sub(
            r"\d\d", lambda n: f"[{n.group(0)}]({by_number[n.group(0)]}.html)",
            match.group(0)[len(match.group(1)) + 1:])

    def stem(match):
        name = match.group(1)
        return f"[{name}]({name}.html)" if name in stems and name != here else name

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
    sections, lines, name, heading, fenced = [], [], "readme.html", "wd-teach", False
    for line in (REPO / "README.md").read_text(encoding="utf-8").splitlines():
        fenced ^= line.startswith("```")
        if line.startswith("## ") and not fenced:
            sections.append((name, heading, "\n".join(lines)))
            heading = line[3:].strip()
            name, lines = f"readme-{slug(heading)}.html", [f"# {heading}"]
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
            return f"]({Path(where).stem}.html)"
        if where in DOCUMENTS:
            return f"]({DOCUMENTS[where][0]}{'#' + anchor if anchor else ''})"
        if where == "README.md":
            return f"]({readme_pages.get(anchor, 'readme.html')})"
        return f"]({blob}{where}{'#' + anchor if anchor else ''})"

    return re.sub(r"\]\(([^)\s]+)\)", target, text)


# ---- the pages ------------------------------------------------------------------------------

HERE = ' class="here" aria-current="page"'


def sidebar(contents: list[tuple[str, list[tuple[str, str]]]], here: str) -> str:
    """The left column of every page: search, then every page of the book, by part."""
    parts = []
    for part, pages in contents:
        items = "".join(
            f'<li{HERE if page == here else ""}><a href="{page}">{html.escape(label)}</a></li>'
            for page, label in pages)
        parts.append(f'<p class="toc-head">{html.escape(part)}</p><ol class="toc">{items}</ol>')
    return ('<aside class="book-side" aria-label="Contents">'
            '<a class="home" href="index.html">wd-teach: the book</a>'
            '<input type="search" id="book-search" placeholder="Search the book" '
            'aria-label="Search the book" autocomplete="off">'
            '<ol id="book-results" class="book-results" aria-live="polite" hidden></ol>'
            f'{"".join(parts)}</aside>')


def nav(stems: list[str], i: int) -> str:
    """The bar at the top and bottom of lesson i: the notebook, previous and next."""
    links = [f'<a href="notebooks/{stems[i]}.ipynb">This notebook, run (.ipynb)</a>',
             '<span class="spacer"></span>']
    if i > 0:
        links.append(f'<a href="{stems[i - 1]}.html">&larr; {stems[i - 1]}</a>')
    if i + 1 < len(stems):
        links.append(f'<a href="{stems[i + 1]}.html">{stems[i + 1]} &rarr;</a>')
    return f'<nav class="book">{"".join(links)}</nav>'


def for_the_book(notebook, stems: list[str], here: str):
    """The notebook's markdown with lessons linked and badges as text (a copy is changed)."""
    notebook = nbformat.from_dict(json.loads(json.dumps(notebook)))
    for cell in notebook.cells:
        if cell.cell_type == "markdown":
            cell.source = link_lessons(unbadge(cell.source), stems, here)
    return notebook


def render_lessons(out: Path, contents) -> list:
    """One HTML page per notebook in out/notebooks/; returns the notebooks, in order."""
    exporter = HTMLExporter(template_name="lab", extra_loaders=[DictLoader(
        {"book.html.j2": PAGE_TEMPLATE})], template_file="book.html.j2")
    stems = [path.stem for path in notebooks()]
    lessons = []
    for i, stem in enumerate(stems):
        notebook = nbformat.read(out / "notebooks" / f"{stem}.ipynb", as_version=4)
        page_notebook = for_the_book(notebook, stems, stem)
        page_notebook.metadata["title"] = title(notebook)
        page, _ = exporter.from_notebook_node(page_notebook, resources={
            "book_head": HEAD, "book_side": sidebar(contents, f"{stem}.html"),
            "book_nav": nav(stems, i)})
        (out / f"{stem}.html").write_text(page, encoding="utf-8")
        lessons.append((stem, notebook))
    return lessons


def standalone(heading: str, body: str, side: str) -> str:
    return (f'<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
            f'<meta name="viewport" content="width=device-width, initial-scale=1.0">'
            f"<title>{html.escape(heading)}</title><style>{DOC_CSS}</style>{HEAD}</head>"
            f"<body>{side}<main>{body}</main></body></html>\n")


def render_index(out: Path, lessons: list, contents, executed_here: bool) -> None:
    stems = [stem for stem, _ in lessons]
    plans = "".join(
        f'<div class="lesson"><h2><a href="{stem}.html">{html.escape(title(notebook))}</a>'
        f"</h2>{markdown2html_mistune(link_lessons(lesson_plan(notebook), stems, stem))}</div>"
        for stem, notebook in lessons)
    body = (
        "<h1>wd-teach: end-to-end multi-agent RL on a GPU, one notebook at a time</h1>"
        f'<p class="note">Every lesson below is shown {html.escape(where_run(executed_here))}. '
        "To run the lessons, open them on Colab from the link at the top of each page, or "
        f'clone <a href="{html.escape(repository())}">the repository</a>. For teachers: '
        '<a href="teaching.html">the teacher\'s guide</a>. Search the whole book from the box '
        "on the left.</p>"
        f"{plans}")
    (out / "index.html").write_text(
        standalone("wd-teach: the lessons", body, sidebar(contents, "index.html")), "utf-8")


def render_documents(out: Path, stems: list[str], contents) -> None:
    """docs/teaching.md, docs/architecture.md and README's sections, each a page."""
    readme = readme_sections()
    readme_pages = {slug(heading): page for page, heading, _ in readme[1:]}
    pages = [(source, DOCUMENTS[source][0], (REPO / source).read_text(encoding="utf-8"))
             for source in DOCUMENTS]
    pages += [("README.md", page, text) for page, _, text in readme]
    for source, page, text in pages:
        text = link_lessons(unbadge(relink_document(text, source, stems, readme_pages)), stems)
        body = markdown2html_mistune(text)
        heading = re.search(r"<h1[^>]*>(.*?)<", body)
        (out / page).write_text(standalone(
            html.unescape(heading.group(1)) if heading else page, body,
            sidebar(contents, page)), "utf-8")


def table_of_contents(lessons: list) -> list[tuple[str, list[tuple[str, str]]]]:
    """The book's parts and their pages, as the sidebar lists them."""
    documents = [(page, re.search(r"^# (.+)$", (REPO / source).read_text(encoding="utf-8"),
                                  re.MULTILINE).group(1).strip())
                 for source, (page, _) in DOCUMENTS.items()]
    return [("Lessons", [(f"{stem}.html", title(notebook)) for stem, notebook in lessons]),
            ("For teachers", documents),
            ("README", [(page, heading) for page, heading, _ in readme_sections()])]


# ---- search ---------------------------------------------------------------------------------

class Sections(HTMLParser):
    """A page's text, cut at its headings that have an id: [(id, heading, text)]. The sidebar,
    the bars, scripts and styles are left out."""

    SKIP = {"script", "style", "aside", "nav", "svg", "head"}
    #: Tags that part words: their text is not glued to the text around them.
    BLOCKS = {"p", "div", "li", "pre", "td", "th", "tr", "br", "h1", "h2", "h3", "h4", "h5",
              "h6", "table", "ul", "ol", "blockquote"}

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.sections = [["", [], []]]
        self.skipping, self.depth, self.heading = None, 0, None

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if tag in self.BLOCKS:
            self.handle_data(" ")
        if self.skipping:
            self.depth += tag == self.skipping
        elif tag in self.SKIP or "anchor-link" in (attrs.get("class") or ""):
            self.skipping, self.depth = tag, 1
        elif re.fullmatch(r"h[1-4]", tag) and attrs.get("id"):
            self.sections.append([attrs["id"], [], []])
            self.heading = tag

    def handle_endtag(self, tag):
        if tag in self.BLOCKS:
            self.handle_data(" ")
        if self.skipping:
            self.depth -= tag == self.skipping
            if not self.depth:
                self.skipping = None
        elif tag == self.heading:
            self.heading = None

    def handle_data(self, data):
        if not self.skipping:
            self.sections[-1][1 if self.heading else 2].append(data)


def search_index(out: Path, pages: list[tuple[str, str]]) -> list[dict]:
    """Every section of every page, as search.js reads it."""
    entries = []
    for page, page_title in pages:
        parser = Sections()
        parser.feed((out / page).read_text(encoding="utf-8"))
        for anchor, heading, text in parser.sections:
            text = " ".join("".join(text).split())
            heading = " ".join("".join(heading).split())
            if text or heading:
                entries.append({"url": f"{page}#{anchor}" if anchor else page,
                                "page": page_title, "heading": heading, "text": text})
    return entries


def write_static(out: Path, contents) -> None:
    """_static/: the stylesheet, the search script and the index it searches."""
    static = out / "_static"
    static.mkdir(exist_ok=True)
    for name in ("book.css", "search.js"):
        shutil.copy(ASSETS / name, static / name)
    pages = [("index.html", "wd-teach: the book")] + [p for _, part in contents for p in part]
    entries = search_index(out, pages)
    (static / "search-index.js").write_text(
        "// Written by scripts/book.py: every section of every page, for search.js.\n"
        f"window.BOOK_INDEX = {json.dumps(entries, ensure_ascii=False)};\n", encoding="utf-8")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=REPO / "build" / "book")
    parser.add_argument("--jobs", type=int, default=1, help="notebooks executed at once")
    args = parser.parse_args(argv)
    if args.jobs < 1:
        parser.error(f"--jobs {args.jobs}: give 1 or more")
    run_here = execute_switch()
    if args.out.exists():
        shutil.rmtree(args.out)
    start = time.perf_counter()
    seconds = execute_all(args.out, args.jobs) if run_here else copy_saved(args.out)
    lessons = [(path.stem, nbformat.read(args.out / "notebooks" / path.name, as_version=4))
               for path in notebooks()]
    contents = table_of_contents(lessons)
    render_lessons(args.out, contents)
    render_index(args.out, lessons, contents, run_here)
    render_documents(args.out, [stem for stem, _ in lessons], contents)
    write_static(args.out, contents)
    (args.out / "timings.json").write_text(json.dumps(seconds, indent=1) + "\n")
    for stem, took in seconds.items():
        print(f"{took:7.1f} s  {stem}")
    print(f"{time.perf_counter() - start:7.1f} s  in all: {args.out / 'index.html'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
