"""The book (Jupyter Book 2) in a real browser, served from its folder on this machine with
every request beyond it refused: the table of contents on every page lists every lesson
(read from notebooks/, so a new notebook is covered) and the documents, search finds a word
of lesson 09, the lessons link each other, and every page, lessons and documents alike, draws
every image it has (each figure a notebook saved among them), shows no error and asks the
network for nothing (the Colab badge is a text link).

The book is the one `scripts/book.sh` builds. CI builds it once, before the tests, and names
it in WD_TEACH_BOOK; without that variable this test builds it into a temporary folder (the
site theme's first build takes a few minutes, then half a minute). It shows the outputs saved
in the notebooks: a figure no notebook saved is not looked for. Screenshots of a lesson and of
search go to artifacts/.
"""

import json
import os
import re
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest
from browser.lab_driver import ARTIFACTS, CHROMIUM, CHROMIUM_ARGS, browser_missing, free_port

REPO = Path(__file__).resolve().parents[2]
STEMS = [path.stem for path in sorted((REPO / "notebooks").glob("*.ipynb"))]
#: The pages that are not lessons: the teacher's guide, docs/architecture.md, README's sections.
DOCUMENTS = ["teaching.md", "architecture.md", "readme.md", "readme-the-book.md"]
IMAGE_TYPES = ("image/png", "image/jpeg", "image/svg+xml")
#: The table of contents in the left column of every page.
SIDEBAR = "nav[aria-label='Table of Contents'] a"

pytestmark = [pytest.mark.browser, pytest.mark.slow,
              pytest.mark.skipif(browser_missing() is not None, reason=str(browser_missing()))]


@pytest.fixture(scope="module")
def book(tmp_path_factory) -> Path:
    """The built book: $WD_TEACH_BOOK, or one built here."""
    named = os.environ.get("WD_TEACH_BOOK")
    if named:
        assert (Path(named) / "pages.json").is_file(), (
            f"WD_TEACH_BOOK={named} holds no pages.json: build it with `bash scripts/book.sh` "
            "(BOOK_OUT picks the folder), or unset WD_TEACH_BOOK to build one for this test")
        return Path(named)
    out = tmp_path_factory.mktemp("book") / "book"
    subprocess.run([sys.executable, str(REPO / "scripts" / "book.py"), "--out", str(out)],
                   check=True, timeout=1800, env={**os.environ, "BOOK_EXECUTE": "0"})
    return out


@pytest.fixture(scope="module")
def site(book):
    """The book served on this machine, as a room would serve its copy: its address."""
    port = free_port()
    server = subprocess.Popen([sys.executable, "-m", "http.server", str(port), "--bind",
                               "127.0.0.1", "--directory", str(book)],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    base = f"http://127.0.0.1:{port}"
    try:
        for _ in range(100):
            try:
                urllib.request.urlopen(base + "/pages.json", timeout=2).close()
                break
            except OSError:
                time.sleep(0.1)
        yield base
    finally:
        server.terminate()
        server.wait(timeout=10)


@pytest.fixture(scope="module")
def pages(book) -> dict[str, str]:
    """Each page's source (00_welcome.ipynb, teaching.md) -> its address in the site."""
    slugs = json.loads((book / "pages.json").read_text(encoding="utf-8"))
    return {source: "/" if slug == "index" else f"/{slug}" for source, slug in slugs.items()}


@pytest.fixture(scope="module")
def browser():
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        chromium = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS,
                                              headless=True)
        yield chromium
        chromium.close()


def open_page(browser, site: str, address: str):
    """The page at `address`, loaded, with what it asked beyond the site and what its scripts
    logged as errors. Nothing beyond the site is let through: the book must read offline."""
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    fetched, errors = [], []
    page.on("console", lambda message: message.type == "error" and errors.append(message.text))
    page.on("pageerror", lambda error: errors.append(str(error)))
    page.on("response", lambda response: response.status >= 400 and errors.append(
        f"{response.status} {response.url}"))

    def route(request_route):
        request = request_route.request
        if request.url.startswith((site + "/", "data:", "blob:")):
            request_route.continue_()
        else:
            fetched.append((request.resource_type, request.url))
            request_route.abort()

    page.route("**/*", route)
    page.goto(site + address, wait_until="networkidle")
    return page, fetched, errors


def saved_figures(notebook: dict) -> int:
    """Figures the notebook saved: outputs with an image."""
    return sum(any(kind in output.get("data", {}) for kind in IMAGE_TYPES)
               for cell in notebook["cells"] for output in cell.get("outputs", []))


def lesson_title(book: Path, stem: str) -> str:
    """The lesson's heading, from the notebook the page was made from."""
    notebook = json.loads((book / "notebooks" / f"{stem}.ipynb").read_text(encoding="utf-8"))
    return next("".join(c["source"]).splitlines()[0][2:].strip() for c in notebook["cells"]
                if c["cell_type"] == "markdown" and "".join(c["source"]).startswith("# "))


def heading(page) -> str:
    """The page's first heading, its typographic apostrophes as the notebook types them."""
    return page.locator("h1").first.inner_text().strip().replace("\u2019", "'")


def assert_every_image_drawn(page, site: str, where: str) -> int:
    """Every <img> on the page decoded and drawn, none of them from beyond the site."""
    images = page.locator("img")
    sizes = images.evaluate_all("images => images.map(i => [i.complete, i.naturalWidth, i.src])")
    assert all(done and width > 0 for done, width, _ in sizes), (
        f"{where}: an image is not drawn: {[src[:80] for d, w, src in sizes if not (d and w)]}")
    assert not [src for _, _, src in sizes if not src.startswith((site, "data:"))], (
        f"{where}: an image from the network")
    return len(sizes)


def assert_sidebar_lists_every_lesson(page, pages: dict, where: str) -> None:
    hrefs = page.locator(SIDEBAR).evaluate_all("links => links.map(a => a.getAttribute('href'))")
    lessons = [href for href in hrefs if href in {pages[f"{stem}.ipynb"] for stem in STEMS}]
    assert lessons == [pages[f"{stem}.ipynb"] for stem in STEMS], (
        f"{where}: the table of contents lists {lessons}, not every lesson in order")
    # The teacher's guide is the book's first page (its title links it); README's sections
    # are listed under README, open on README's pages.
    for name in ["architecture.md", "readme.md"]:
        assert pages[name] in hrefs, f"{where}: the table of contents has no {name}"
    if where.startswith("readme"):
        assert pages["readme-the-book.md"] in hrefs, f"{where}: README's sections are not listed"


def test_search_finds_a_word_of_lesson_09(book, site, pages, browser):
    """A word of lesson 09's title, typed into the search box on the first page, gives a
    result on lesson 09's page, and following it opens that page."""
    stem = next(stem for stem in STEMS if stem.startswith("09_"))
    word = max(re.findall(r"[A-Za-z]{4,}", lesson_title(book, stem)), key=len)
    page, fetched, errors = open_page(browser, site, "/")
    try:
        page.locator("button", has_text="Search").first.click()
        page.locator("input[type='search']").fill(word)
        hits = page.locator(f"[role='dialog'] a[href^='{pages[stem + '.ipynb']}']")
        hits.first.wait_for(timeout=10_000)
        ARTIFACTS.mkdir(exist_ok=True)
        page.screenshot(path=str(ARTIFACTS / "book-search.png"))
        hits.first.click()
        page.wait_for_url(f"**{pages[stem + '.ipynb']}**")
        assert heading(page) == lesson_title(book, stem)
        assert fetched == [] and errors == [], f"{fetched} {errors}"
    finally:
        page.close()


def test_the_lessons_link_each_other_where_they_name_each_other(book, site, pages, browser):
    """Cross-references: "lesson 03" or "03_sampler" in a lesson's text is a link to that
    lesson's page (the table of contents aside)."""
    lesson_pages = {pages[f"{stem}.ipynb"] for stem in STEMS}
    linking = []
    for stem in STEMS:
        page, _, _ = open_page(browser, site, pages[f"{stem}.ipynb"])
        try:
            hrefs = page.locator("article a").evaluate_all(
                "links => links.filter(a => !a.closest('nav')).map(a => a.getAttribute('href'))")
        finally:
            page.close()
        if (set(hrefs) & lesson_pages) - {pages[f"{stem}.ipynb"]}:
            linking.append(stem)
    assert len(linking) >= len(STEMS) // 2, f"only {linking} link another lesson"


@pytest.mark.parametrize("name", DOCUMENTS)
def test_every_document_page_reads_offline(book, site, pages, browser, name):
    page, fetched, errors = open_page(browser, site, pages[name])
    try:
        assert page.locator("h1").count() >= 1
        assert_sidebar_lists_every_lesson(page, pages, name)
        assert_every_image_drawn(page, site, name)
        assert fetched == [] and errors == [], f"{name}: {fetched} {errors}"
    finally:
        page.close()


@pytest.mark.parametrize("stem", STEMS)
def test_every_lesson_page_shows_its_figures_and_no_error(book, site, pages, browser, stem):
    notebook = json.loads((book / "notebooks" / f"{stem}.ipynb").read_text(encoding="utf-8"))
    page, fetched, errors = open_page(browser, site, pages[f"{stem}.ipynb"])
    try:
        assert heading(page) == lesson_title(book, stem)
        assert_sidebar_lists_every_lesson(page, pages, f"{stem}.ipynb")
        # The figures: at least as many images as the notebook saved, every one drawn.
        drawn = assert_every_image_drawn(page, site, stem)
        assert drawn >= saved_figures(notebook), (
            f"{stem}: {drawn} images on the page, {saved_figures(notebook)} figures saved")
        # Offline, the Colab badge is words: a link that says Colab, no picture to break.
        colab = page.locator("a[href*='colab.research.google.com']")
        assert colab.count() >= 1 and "Colab" in colab.first.inner_text()
        assert colab.first.locator("img").count() == 0
        # No error: none saved, no traceback shown.
        assert not [o for c in notebook["cells"] for o in c.get("outputs", [])
                    if o["output_type"] == "error"]
        assert "Traceback (most recent call last)" not in page.locator("article").inner_text()
        assert fetched == [] and errors == [], f"{stem}: {fetched} {errors}"
        if stem == "07_training":
            ARTIFACTS.mkdir(exist_ok=True)
            page.screenshot(path=str(ARTIFACTS / "book-07_training.png"))
            print(f"\nscreenshot: {ARTIFACTS / 'book-07_training.png'}")
    finally:
        page.close()
