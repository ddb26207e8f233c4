"""The book in a real browser: its index links every lesson, the table of contents on every
page lists every lesson (read from notebooks/, so a new notebook is covered), search finds a
lesson's words, every lesson's page shows the figures its notebook made, every cell run, and no
error, and every page, lessons and documents alike, draws every image it has with nothing
from the network (the Colab badge is a text link).

The book is the one `scripts/book.sh` builds. CI builds it once, before the tests, and names
it in WD_TEACH_BOOK; without that variable this test builds it into a temporary folder (every
notebook executed: a few minutes on a CPU). Screenshots of the index and of a lesson's
learning curve go to artifacts/.
"""

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from browser.lab_driver import ARTIFACTS, CHROMIUM, CHROMIUM_ARGS, browser_missing

REPO = Path(__file__).resolve().parents[2]
STEMS = [path.stem for path in sorted((REPO / "notebooks").glob("*.ipynb"))]
#: The pages that are not lessons: the teacher's guide, docs/architecture.md, README's sections.
DOCUMENTS = ["teaching", "architecture", "readme", "readme-the-book"]
#: Error text in a stderr block: a traceback, or a line that names an exception.
ERROR = re.compile(r"Traceback \(most recent call last\)|^\w*(Error|Exception)\b", re.MULTILINE)
IMAGE_TYPES = ("image/png", "image/jpeg", "image/svg+xml")

pytestmark = [pytest.mark.browser, pytest.mark.slow,
              pytest.mark.skipif(browser_missing() is not None, reason=str(browser_missing()))]


@pytest.fixture(scope="module")
def book(tmp_path_factory) -> Path:
    """The built book: $WD_TEACH_BOOK, or one built here."""
    named = os.environ.get("WD_TEACH_BOOK")
    if named:
        assert (Path(named) / "index.html").is_file(), (
            f"WD_TEACH_BOOK={named} holds no index.html: build it with `bash scripts/book.sh` "
            "(BOOK_OUT picks the folder), or unset WD_TEACH_BOOK to build one for this test")
        return Path(named)
    out = tmp_path_factory.mktemp("book")
    subprocess.run([sys.executable, str(REPO / "scripts" / "book.py"), "--out", str(out),
                    "--jobs", str(min(2, os.cpu_count() or 1))], check=True, timeout=1800)
    return out


@pytest.fixture(scope="module")
def browser():
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        chromium = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS,
                                              headless=True)
        yield chromium
        chromium.close()


def open_page(browser, path: Path):
    """The page at `path`, loaded, with what it asked of the network and what its scripts
    logged as errors. Nothing from the network is let through: the book must read offline."""
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    fetched, errors = [], []
    # A request refused below is logged as "Failed to load resource": `fetched` holds those.
    page.on("console", lambda message: message.type == "error" and not message.text.startswith(
        "Failed to load resource") and errors.append(message.text))
    page.on("pageerror", lambda error: errors.append(str(error)))

    def route(request_route):
        request = request_route.request
        if request.url.startswith(("file:", "data:")):
            request_route.continue_()
        else:
            fetched.append((request.resource_type, request.url))
            request_route.abort()

    page.route("**/*", route)
    page.goto(path.as_uri(), wait_until="load")
    return page, fetched, errors


def expected_images(notebook: dict) -> int:
    """Images the page must show: one per figure output, and the <img> of HTML outputs (a
    matplotlib animation is one), as nbconvert prefers HTML where an output has both."""
    count = 0
    for cell in notebook["cells"]:
        for output in cell.get("outputs", []):
            data = output.get("data", {})
            if "text/html" in data:
                count += "".join(data["text/html"]).count("<img")
            elif any(kind in data for kind in IMAGE_TYPES):
                count += 1
    return count


def lesson_title(book: Path, stem: str) -> str:
    """The lesson's heading, from the notebook the page was made from."""
    notebook = json.loads((book / "notebooks" / f"{stem}.ipynb").read_text(encoding="utf-8"))
    return next("".join(c["source"]).splitlines()[0][2:].strip() for c in notebook["cells"]
                if c["cell_type"] == "markdown" and "".join(c["source"]).startswith("# "))


def assert_every_image_drawn(page, where: str) -> None:
    """Every <img> on the page decoded and drawn, none of them from the network."""
    images = page.locator("img")
    sizes = images.evaluate_all("images => images.map(i => [i.complete, i.naturalWidth, i.src])")
    assert all(done and width > 0 for done, width, _ in sizes), (
        f"{where}: an image is not drawn: {[src[:80] for d, w, src in sizes if not (d and w)]}")
    assert not [src for _, _, src in sizes if src.startswith("http")], f"{where}: a remote image"


def assert_sidebar_lists_every_lesson(page, where: str) -> None:
    hrefs = page.locator("aside.book-side .toc a").evaluate_all(
        "links => links.map(a => a.getAttribute('href'))")
    lessons = [href.removesuffix(".html") for href in hrefs if re.match(r"\d\d_", href)]
    assert lessons == STEMS, f"{where}: the table of contents lists {lessons}, not {STEMS}"
    for name in DOCUMENTS:
        assert f"{name}.html" in hrefs, f"{where}: the table of contents has no {name}.html"


def test_the_index_links_every_lesson_and_the_teachers_guide(book, browser):
    page, fetched, errors = open_page(browser, book / "index.html")
    try:
        links = page.locator(".lesson h2 a")
        assert [href.removesuffix(".html") for href in
                links.evaluate_all("links => links.map(a => a.getAttribute('href'))")] == STEMS
        assert all(re.match(r"\d\d · \S", text) for text in links.all_inner_texts())
        assert page.locator(".lesson", has_text="In this lesson you will").count() == len(STEMS)
        assert_sidebar_lists_every_lesson(page, "index.html")
        ARTIFACTS.mkdir(exist_ok=True)
        page.screenshot(path=str(ARTIFACTS / "book-index.png"))
        page.locator("a", has_text="the teacher's guide").click()
        page.wait_for_load_state()
        assert page.locator("h1").inner_text().strip() == "Teaching with wd-teach"
        assert page.locator("main a[href='07_training.html']").count() >= 1
        assert fetched == [] and errors == []
    finally:
        page.close()
    print(f"\nscreenshot: {ARTIFACTS / 'book-index.png'}")


def test_search_finds_a_word_of_lesson_09(book, browser):
    """A word of lesson 09's title, typed into the search box, gives a result on lesson 09's
    page, and following it opens that page."""
    stem = next(stem for stem in STEMS if stem.startswith("09_"))
    word = max(re.findall(r"[A-Za-z]{4,}", lesson_title(book, stem)), key=len)
    page, fetched, errors = open_page(browser, book / "index.html")
    try:
        page.locator("#book-search").fill(word)
        hits = page.locator(f"#book-results a[href^='{stem}.html']")
        hits.first.wait_for(timeout=10_000)
        ARTIFACTS.mkdir(exist_ok=True)
        page.screenshot(path=str(ARTIFACTS / "book-search.png"))
        hits.first.click()
        page.wait_for_load_state()
        assert page.url.split("/")[-1].startswith(f"{stem}.html")
        assert page.locator("h1").first.inner_text().strip() == lesson_title(book, stem)
        assert fetched == [] and errors == []
    finally:
        page.close()


def test_the_lessons_link_each_other_where_they_name_each_other(book, browser):
    """Cross-references: "lesson 03" or "03_sampler" in a lesson's text is a link to that
    lesson's page (the table of contents and the bars aside)."""
    linking = []
    for stem in STEMS:
        text = (book / f"{stem}.html").read_text(encoding="utf-8")
        body = re.sub(r"<aside.*?</aside>|<nav.*?</nav>", "", text, flags=re.DOTALL)
        if set(re.findall(r'<a href="(\d\d_\w+)\.html"', body)) - {stem}:
            linking.append(stem)
    assert len(linking) >= len(STEMS) // 2, f"only {linking} link another lesson"


@pytest.mark.parametrize("name", DOCUMENTS)
def test_every_document_page_reads_offline(book, browser, name):
    page, fetched, errors = open_page(browser, book / f"{name}.html")
    try:
        assert page.locator("main h1").count() == 1
        assert_sidebar_lists_every_lesson(page, f"{name}.html")
        assert_every_image_drawn(page, f"{name}.html")
        assert fetched == [] and errors == [], f"{name}: {fetched} {errors}"
    finally:
        page.close()


@pytest.mark.parametrize("stem", STEMS)
def test_every_page_shows_its_figures_and_no_error(book, browser, stem):
    notebook = json.loads((book / "notebooks" / f"{stem}.ipynb").read_text(encoding="utf-8"))
    page, fetched, errors = open_page(browser, book / f"{stem}.html")
    try:
        assert page.locator("h1").first.inner_text().strip() == lesson_title(book, stem)
        assert_sidebar_lists_every_lesson(page, f"{stem}.html")
        # Every code cell ran: no "[ ]:" prompt left.
        prompts = page.locator(".jp-CodeCell .jp-InputPrompt").all_inner_texts()
        assert prompts and not [p for p in prompts if re.fullmatch(r"\[\s*\]:", p.strip())]
        # The figures: as many as the notebook made, every one decoded and drawn.
        images = page.locator(".jp-OutputArea-output img")
        want = expected_images(notebook)
        assert want >= 1, f"{stem} made no figure"
        assert images.count() == want, f"{stem}: {images.count()} images on the page, {want} made"
        sizes = images.evaluate_all("images => images.map(i => [i.complete, i.naturalWidth])")
        assert all(done and width > 0 for done, width in sizes), f"{stem}: an image did not load"
        assert all(src.startswith("data:image/") for src in images.evaluate_all(
            "images => images.map(i => i.getAttribute('src') || 'data:image/ (set by script)')"))
        assert_every_image_drawn(page, f"{stem}.html")
        # Offline, the Colab badge is words: a link that says Colab, no picture to break.
        colab = page.locator("a[href*='colab.research.google.com']")
        assert colab.count() >= 1 and "Colab" in colab.first.inner_text()
        # No error: no error output, no traceback or exception in what went to stderr.
        assert not [o for c in notebook["cells"] for o in c.get("outputs", [])
                    if o["output_type"] == "error"]
        stderr = page.locator("[data-mime-type='application/vnd.jupyter.stderr']")
        shown = [text for text in stderr.all_inner_texts() if ERROR.search(text)]
        assert shown == [], f"{stem} shows an error on stderr: {shown[0][:300] if shown else ''}"
        assert not [t for t in page.locator(".jp-OutputArea-output").all_inner_texts()
                    if "Traceback (most recent call last)" in t]
        # Offline: the page asked the network for no script and no image (the icon font of
        # matplotlib's animation controls, a stylesheet, may be missing).
        assert [url for kind, url in fetched if kind not in ("stylesheet", "font")] == []
        assert errors == [], f"{stem}: the page's scripts failed: {errors}"
        if stem == "07_training":
            curve = images.first
            curve.scroll_into_view_if_needed()
            page.screenshot(path=str(ARTIFACTS / "book-07_training.png"))
            print(f"\nscreenshot: {ARTIFACTS / 'book-07_training.png'}")
    finally:
        page.close()
