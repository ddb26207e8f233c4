"""The book's sources as scripts/book.py stages them for Jupyter Book, without a browser, a
kernel or Node.js: lessons named in a text become links, remote images become text links,
README is cut into its sections, the table of contents lists every lesson, what a notebook
carries is counted, and BOOK_EXECUTE says what it takes. tests/browser/test_book.py browses
the built book."""

import sys
from pathlib import Path

import nbformat
import pytest

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "scripts"))
# BOOK_EXECUTE=1 runs notebooks with nbclient (the test extra); a GPU machine's kit may lack it.
pytest.importorskip("nbclient", reason="the book's runner needs nbclient: pip install -e '.[dev]'")
import book  # noqa: E402  (scripts/ is not a package)

STEMS = ["00_welcome", "01_data_push", "03_sampler"]


def test_lessons_named_in_a_text_become_links_but_not_in_code_or_paths():
    text = ("**Before it:** lesson 00. Notebooks 00 and 01 take a minute; see 03_sampler, "
            "`lesson 03` in code, notebooks/03_sampler.ipynb, and lesson 07 (no such page).")
    linked = book.link_lessons(text, STEMS, here="01_data_push")
    assert "[lesson 00](00_welcome.ipynb)" in linked
    assert "Notebooks [00](00_welcome.ipynb) and [01](01_data_push.ipynb) take" in linked
    assert "[03_sampler](03_sampler.ipynb)" in linked
    assert "`lesson 03`" in linked and "notebooks/03_sampler.ipynb" in linked
    assert "lesson 07 (no such page)" in linked
    assert book.link_lessons("lessons 00 to 03", STEMS) == (
        "lessons [00](00_welcome.ipynb) to [03](03_sampler.ipynb)")


def test_the_colab_badge_becomes_a_text_link():
    badge = ("[![Open In Colab](https://colab.research.google.com/assets/colab-badge.svg)]"
             "(https://colab.research.google.com/github/o/r/blob/main/notebooks/00_welcome.ipynb)")
    assert book.unbadge(badge) == (
        "[Open In Colab ↗](https://colab.research.google.com/github/o/r/blob/main/notebooks/"
        "00_welcome.ipynb)")
    assert book.unbadge("![a plot](data/plot.png)") == "![a plot](data/plot.png)"


def test_readme_is_cut_at_its_sections_each_a_page():
    sections = book.readme_sections()
    assert sections[0][0] == "readme.md"
    assert ("readme-the-book.md", "The book") in [(page, title) for page, title, _ in sections]
    assert all(text.startswith(f"# {title}") for _, title, text in sections[1:])


def test_documents_link_the_lessons_and_the_readme_pages():
    text = ("See [lesson 07](../notebooks/07_training.ipynb), [the book](../README.md#the-book) "
            "and [the package](../wd_teach/__init__.py).")
    linked = book.relink_document(text, "docs/teaching.md", ["07_training"],
                                  {"the-book": "readme-the-book.md"})
    assert "](07_training.ipynb)" in linked and "](readme-the-book.md)" in linked
    assert "/blob/main/wd_teach/__init__.py)" in linked


def test_the_table_of_contents_lists_every_lesson_and_document():
    stems = [path.stem for path in book.notebooks()]
    readme = [(page, title) for page, title, _ in book.readme_sections()]
    config = book.myst_yml(stems, readme)
    for source in [f"{stem}.ipynb" for stem in stems] + [page for page, _ in readme] + [
            "teaching.md", "architecture.md"]:
        assert f"- file: {source}\n" in config, f"{source} is not in the table of contents"
    assert f"template: {book.THEME / 'template.yml'}" in config


def test_what_a_notebook_carries_is_counted():
    ran = nbformat.v4.new_code_cell("plot()", execution_count=1, outputs=[
        nbformat.v4.new_output("display_data", data={"image/png": "iVBOR", "text/plain": "F"})])
    notebook = nbformat.v4.new_notebook(cells=[ran, nbformat.v4.new_code_cell("1 + 1")])
    assert book.saved_outputs(notebook) == "  1 of   2 code cells run,  1 figures"


def test_book_execute_says_what_it_takes(monkeypatch):
    monkeypatch.setenv("BOOK_EXECUTE", "1")
    assert book.execute_switch() is True
    monkeypatch.delenv("BOOK_EXECUTE")
    assert book.execute_switch() is False
    monkeypatch.setenv("BOOK_EXECUTE", "yes")
    with pytest.raises(SystemExit, match="give 0 .* or 1"):
        book.execute_switch()


def test_outputs_are_drawn_without_thebe():
    """An animation becomes a GIF of its frames, displayed Markdown a markdown cell after its
    code cell, other HTML its plain text: the book then fetches nothing from a CDN."""
    import base64
    import io

    from PIL import Image

    def frame(colour):
        buffer = io.BytesIO()
        Image.new("RGB", (4, 4), colour).save(buffer, "PNG")
        return base64.b64encode(buffer.getvalue()).decode()

    colours = ["red", "green", "blue"]
    animation = ("<link href='https://cdn/fa.css'>" + "".join(
        f'frames[{i}] = "data:image/png;base64,{frame(c)}";' for i, c in enumerate(colours))
        + "new Animation(frames, 'img', 'slider', 50.0, 'loop');")
    cell = nbformat.v4.new_code_cell("show()", outputs=[
        nbformat.v4.new_output("display_data", {"text/html": animation, "text/plain": "<HTML>"}),
        nbformat.v4.new_output("display_data", {"text/markdown": "| a |\n|---|\n| 1 |",
                                                "text/plain": "<Markdown>"}),
        nbformat.v4.new_output("display_data", {"text/html": "<table/>", "text/plain": "a 1"})])
    staged = book.offline_outputs([cell])
    assert [c.cell_type for c in staged] == ["code", "markdown"]
    assert staged[1].source.startswith("| a |")
    gif, text = (output["data"] for output in staged[0].outputs)
    assert list(gif) == ["image/gif", "text/plain"] and text == {"text/plain": "a 1"}
    shown = Image.open(io.BytesIO(base64.b64decode(gif["image/gif"])))
    assert shown.n_frames == 3 and shown.info["duration"] == 50


def test_the_pages_workflow_publishes_what_book_sh_builds_under_the_repository_s_path():
    """.github/workflows/pages.yml: README's one workflow. It runs scripts/book.sh with
    BASE_URL set to the repository's Pages path, uploads the folder book.sh writes to, and
    deploys it with the permissions Pages asks for."""
    import re

    import yaml

    flow = yaml.safe_load((REPO / ".github/workflows/pages.yml").read_text())
    assert flow["permissions"] == {"contents": "read", "pages": "write", "id-token": "write"}
    build = flow["jobs"]["build"]["steps"]
    runs = [s["run"] for s in build if "run" in s]
    assert runs == ['BASE_URL="/${{ github.event.repository.name }}" bash scripts/book.sh']
    default_out = re.search(r'BOOK_OUT:-([^}"]+)', (REPO / "scripts/book.sh").read_text())[1]
    (upload,) = [s for s in build if s.get("uses", "").startswith("actions/upload-pages-artifact")]
    assert upload["with"]["path"] == default_out
    deploy = flow["jobs"]["deploy"]
    assert deploy["needs"] == "build"
    assert [s["uses"].split("@")[0] for s in deploy["steps"]] == ["actions/deploy-pages"]
