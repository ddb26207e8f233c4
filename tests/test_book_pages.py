"""The book's pages made from the sources (scripts/book.py), without a browser or a kernel:
lessons named in a text become links, remote images become text links, README is cut into
its sections, search finds a page's sections, and BOOK_EXECUTE picks where outputs come from.
tests/browser/test_book.py browses the built book."""

import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "scripts"))
# The book's build tools come with the dev extra; a GPU machine's kit may lack them.
pytest.importorskip("nbconvert", reason="the book is built with nbconvert: pip install -e '.[dev]'")
import book  # noqa: E402  (scripts/ is not a package)

STEMS = ["00_welcome", "01_data_push", "03_sampler"]


def test_lessons_named_in_a_text_become_links_but_not_in_code_or_paths():
    text = ("**Before it:** lesson 00. Notebooks 00 and 01 take a minute; see 03_sampler, "
            "`lesson 03` in code, notebooks/03_sampler.ipynb, and lesson 07 (no such page).")
    linked = book.link_lessons(text, STEMS, here="01_data_push")
    assert "[lesson 00](00_welcome.html)" in linked
    assert "Notebooks [00](00_welcome.html) and [01](01_data_push.html) take" in linked
    assert "[03_sampler](03_sampler.html)" in linked
    assert "`lesson 03`" in linked and "notebooks/03_sampler.ipynb" in linked
    assert "lesson 07 (no such page)" in linked
    assert book.link_lessons("lessons 00 to 03", STEMS) == (
        "lessons [00](00_welcome.html) to [03](03_sampler.html)")


def test_the_colab_badge_becomes_a_text_link():
    badge = ("[![Open In Colab](https://colab.research.google.com/assets/colab-badge.svg)]"
             "(https://colab.research.google.com/github/o/r/blob/main/notebooks/00_welcome.ipynb)")
    assert book.unbadge(badge) == (
        "[Open In Colab ↗](https://colab.research.google.com/github/o/r/blob/main/notebooks/"
        "00_welcome.ipynb)")
    assert book.unbadge("![a plot](data/plot.png)") == "![a plot](data/plot.png)"


def test_readme_is_cut_at_its_sections_each_a_page():
    sections = book.readme_sections()
    assert sections[0][0] == "readme.html"
    assert ("readme-the-book.html", "The book") in [(page, title) for page, title, _ in sections]
    assert all(text.startswith(f"# {title}") for _, title, text in sections[1:])


def test_search_finds_the_sections_of_a_page(tmp_path):
    (tmp_path / "p.html").write_text(
        '<html><head><title>no</title></head><body><aside>contents</aside>'
        '<h1 id="A">Alpha<a class="anchor-link" href="#A">¶</a></h1><p>first words</p>'
        '<h2 id="B">Beta</h2><p>second</p><p>words</p><script>var x;</script></body></html>')
    entries = book.search_index(tmp_path, [("p.html", "Page")])
    assert entries == [
        {"url": "p.html#A", "page": "Page", "heading": "Alpha", "text": "first words"},
        {"url": "p.html#B", "page": "Page", "heading": "Beta", "text": "second words"}]


def test_book_execute_says_what_it_takes(monkeypatch):
    monkeypatch.setenv("BOOK_EXECUTE", "0")
    assert book.execute_switch() is False
    monkeypatch.delenv("BOOK_EXECUTE")
    assert book.execute_switch() is True
    monkeypatch.setenv("BOOK_EXECUTE", "yes")
    with pytest.raises(SystemExit, match="give 1 .* or 0"):
        book.execute_switch()


def test_saved_outputs_are_required_when_nothing_is_run(tmp_path, monkeypatch):
    folder = tmp_path / "notebooks"
    folder.mkdir()
    import nbformat

    notebook = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("1 + 1")])
    nbformat.write(notebook, folder / "00_x.ipynb")
    monkeypatch.setattr(book, "NOTEBOOKS", folder)
    with pytest.raises(SystemExit, match="00_x.ipynb: code cell 0 .* never run"):
        book.copy_saved(tmp_path / "out")
    notebook.cells[0].execution_count = 1
    nbformat.write(notebook, folder / "00_x.ipynb")
    book.copy_saved(tmp_path / "out")
    assert (tmp_path / "out" / "notebooks" / "00_x.ipynb").is_file()
