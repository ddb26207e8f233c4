"""Figures that the README and the teacher's guide quote agree with their source.

A measured number in prose goes stale silently when the measurement is run again. So every
passage (a paragraph or a list item) that cites a results file, `bench/results/NAME.json`
(or a log or table of them, `.log` or `.txt`), quotes only numbers found in the files it
cites (or in bench/NOTES.md where it cites that too, or among the numbers of a log it
cites), rounded as quoted: rates and counts,
milliseconds, seconds, GiB and multiples ("5.7x": a number in the files or the ratio of
two); sizes (envs, games, agents, iterations) are settings, not measurements. A count of
tests has no file to be checked against, so none is quoted: the test run says it. The
notebooks' times have their own test (tests/test_lesson_plans.py).
"""

import json
import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
DOCUMENTS = ["README.md", "docs/teaching.md"]
CITED = re.compile(r"bench/results/([\w.-]+\.(?:json|log|txt))")
#: A log or a table of results: its numbers are read from its text.
TEXTS = re.compile(r"bench/results/([\w.-]+\.(?:log|txt))")
#: 12,345 or 1,234,567: a measured rate or count as the documents write one.
BIG = re.compile(r"(?<![\w.,])(\d{1,3}(?:,\d{3})+)(?![\d,]*\d)(?!\s*(?:x |envs\b|games\b|"
                 r"agents\b|iterations\b|runners\b|-env))")
#: 0.365 ms: a measured time.
MILLISECONDS = re.compile(r"(?<![\w.,])(\d+\.\d+) ms\b")
#: 41 s, 2.5-3.2 s, 36 to 38 s: a measured time in seconds (both ends of a range).
SECONDS = re.compile(r"(?<![\w.,-])(\d+(?:\.\d+)?)(?:(?:-| to )(\d+(?:\.\d+)?))? s\b")
#: 33.6 GiB: measured memory (the files hold GiB or bytes).
GIB = re.compile(r"(?<![\w.,])(\d+(?:\.\d+)?) GiB\b")
#: 5.7x, 305x: a measured multiple (in the files, or the ratio of two of their numbers).
MULTIPLE = re.compile(r"(?<![\w.,])(\d+(?:\.\d+)?)x\b")


def passages(text: str) -> list[str]:
    """A document's paragraphs, each list item apart."""
    return [item for paragraph in re.split(r"\n\s*\n", text)
            for item in re.split(r"\n(?=- )", paragraph)]


def numbers(tree) -> list[float]:
    """Every number in a JSON tree."""
    if isinstance(tree, bool):
        return []
    if isinstance(tree, (int, float)):
        return [tree]
    values = tree.values() if isinstance(tree, dict) else tree if isinstance(tree, list) else []
    return [n for value in values for n in numbers(value)]


def unfound(passage: str) -> list[str]:
    """The measured figures of a passage that its cited files do not hold."""
    values = [n for name in CITED.findall(passage) if name.endswith(".json")
              for n in numbers(json.loads((REPO / "bench" / "results" / name).read_text()))]
    notes = (REPO / "bench" / "NOTES.md").read_text() if "bench/NOTES.md" in passage else ""
    missing = []
    for quoted in BIG.findall(passage):
        n = int(quoted.replace(",", ""))
        rounded = n % 1000 == 0  # "242,000": a rate quoted to the thousand
        if not (any(round(v) == n or (rounded and round(v, -3) == n) for v in values)
                or quoted in notes):
            missing.append(quoted)
    for quoted in MILLISECONDS.findall(passage):
        places = len(quoted.split(".")[1])
        if not any(round(v, places) == float(quoted) or round(v * 1e3, places) == float(quoted)
                   for v in values):
            missing.append(f"{quoted} ms")
    logs = "".join((REPO / "bench" / "results" / name).read_text()
                   for name in TEXTS.findall(passage))
    values += [float(n.replace(",", "")) for n in re.findall(r"\d[\d,]*(?:\.\d+)?", logs)]

    def held(quoted: str, unit: str, scales=(1.0,)) -> bool:
        """In the files, rounded as quoted, or written so in the notes or a cited log."""
        places = len(quoted.split(".")[1]) if "." in quoted else 0
        return (any(round(v * k, places) == float(quoted) for v in values for k in scales)
                or f"{quoted}{unit}" in notes or f"{quoted}{unit}" in logs)

    for low, high in SECONDS.findall(passage):
        missing += [f"{q} s" for q in (low, high) if q and not held(q, " s")]
    missing += [f"{q} GiB" for q in GIB.findall(passage)
                if not held(q, " GiB", (1.0, 1 / 2**30))]
    distinct = sorted({v for v in values if v})[:2000]
    for quoted in MULTIPLE.findall(passage):
        places = len(quoted.split(".")[1]) if "." in quoted else 0
        if not (held(quoted, "x") or any(round(a / b, places) == float(quoted)
                                          for a in distinct for b in distinct)):
            missing.append(f"{quoted}x")
    return missing


@pytest.mark.parametrize("document", DOCUMENTS)
def test_figures_quoted_from_bench_results_are_in_the_files_cited(document):
    cited = [p for p in passages((REPO / document).read_text()) if CITED.search(p)]
    assert cited, f"{document} cites no results file"
    wrong = {p.strip()[:80]: unfound(p) for p in cited if unfound(p)}
    assert wrong == {}, f"{document}: figures that the cited files do not hold"


@pytest.mark.parametrize("document", DOCUMENTS)
def test_no_count_of_tests_is_quoted(document):
    """The number of tests grows with every branch; a count in prose is stale at once."""
    text = (REPO / document).read_text().replace("\n", " ")
    assert re.findall(r"\b\d[\d,]* (?:tests|passed)\b(?! on)", text) == []


def test_a_figure_the_cited_file_lacks_is_found():
    passage = ("at 500 envs: 899,969 env steps/s and 12.345 ms "
               "(`bench/results/versus_warpdrive_h100.json`)")
    assert unfound(passage) == ["12.345 ms"]
    assert "1,234,567" in unfound(passage.replace("899,969", "1,234,567"))


def test_a_time_quoted_from_a_results_table_is_checked_against_it():
    passage = ("The last whole check passed in 461 s "
               "(`bench/results/gpu_check_h200_4fe97c8.txt`)")
    assert unfound(passage) == []
    assert unfound(passage.replace("461 s", "407 s")) == []  # a part's time in the table
    assert unfound(passage.replace("461 s", "600 s")) == ["600 s"]


def test_a_time_memory_or_multiple_the_cited_file_lacks_is_found():
    passage = ("32 seats trained in 36 to 38 s each, 41 s in all, peak 33.6 GiB "
               "(`bench/results/room_h200.json`)")
    assert unfound(passage) == []
    assert unfound(passage.replace("38 s", "48 s")) == ["48 s"]
    assert unfound(passage.replace("41 s", "4.1 s")) == ["4.1 s"]
    assert unfound(passage.replace("33.6 GiB", "36.6 GiB")) == ["36.6 GiB"]
    assert unfound(passage + ", 9.99x the seat's limit") == ["9.99x"]
