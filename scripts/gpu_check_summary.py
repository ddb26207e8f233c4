"""The table at the end of scripts/gpu_check.sh, from the folder its parts wrote.

    python scripts/gpu_check_summary.py artifacts/gpu_check

For each part: its JUnit counts, its seconds and its exit status. A part that ran out of time
has no failure in its JUnit file for the tests it never finished, so for the tests part this
also names the tests that had started and not ended (from the progress/ files that
tests/conftest.py writes when WD_TEACH_TEST_PROGRESS is set), with how long each had run.
Exit status 0 only if every part passed.
"""

from __future__ import annotations

import sys
import xml.etree.ElementTree as ET
from pathlib import Path

PARTS = ["tests"] + [f"notebooks-{b}-{t}" for b in ("pycuda", "numba") for t in (1, 2, 3)]


def counts(xml: Path) -> dict[str, int]:
    """passed, failed, errors and skipped from a JUnit file (and `results`, their sum); one
    error if it is missing."""
    try:
        suites = list(ET.parse(xml).getroot().iter("testsuite"))
    except (OSError, ET.ParseError):
        return {"passed": 0, "failed": 0, "errors": 1, "skipped": 0, "results": 0}
    n = {k: sum(int(s.get(k, 0)) for s in suites)
         for k in ("tests", "failures", "errors", "skipped")}
    return {"passed": n["tests"] - n["failures"] - n["errors"] - n["skipped"],
            "failed": n["failures"], "errors": n["errors"], "skipped": n["skipped"],
            "results": n["tests"]}


def collected(progress: Path) -> int | None:
    """How many tests the tests part collected (tests/conftest.py writes it); None unknown."""
    try:
        return int((progress / "collected.txt").read_text())
    except (OSError, ValueError):
        return None


def in_flight(progress: Path) -> list[tuple[str, float]]:
    """(test, seconds it had run) for each test that started and did not end, longest first.

    Each worker's file holds lines `start|end <TAB> unix time <TAB> test id`; the time a test
    had run is counted to the last line any worker wrote, which is about when the part was cut.
    """
    started: dict[str, float] = {}
    last = 0.0
    for log in sorted(progress.glob("*.tsv")):
        for line in log.read_text().splitlines():
            what, when, test = line.split("\t", 2)
            last = max(last, float(when))
            if what == "start":
                started[test] = float(when)
            else:
                started.pop(test, None)
    return sorted(((test, last - when) for test, when in started.items()),
                  key=lambda pair: -pair[1])


def main(out: Path, device: str) -> bool:
    print(f"\nGPU check on {device}")
    print(f"{'part':<20} {'passed':>7} {'failed':>7} {'errors':>7} {'skipped':>8} {'seconds':>8}")
    ok = True
    for name in PARTS:
        rc = int((out / f"{name}.rc").read_text())
        seconds = int((out / f"{name}.seconds").read_text())
        n = counts(out / f"{name}.xml")
        ok &= rc == 0 and n["failed"] == n["errors"] == 0
        print(f"{name:<20} {n['passed']:>7} {n['failed']:>7} {n['errors']:>7} "
              f"{n['skipped']:>8} {seconds:>8}" + ("" if rc == 0 else f"  (exit {rc})"))
    tests = counts(out / "tests.xml")
    total = collected(out / "progress")
    if total is not None and tests["results"] < total:
        ok = False
        print(f"tests without a result: {total - tests['results']} of the {total} collected "
              "(cut off, or never started)")
    running = in_flight(out / "progress")
    if running:
        print("tests still running when the tests part ended (stacks of any past 240 s in "
              f"{out}/progress/*.stacks):")
        for test, seconds in running:
            print(f"  {seconds:6.0f} s  {test}")
    print("GPU CHECK " + ("PASSED" if ok else f"FAILED: see {out}/*.log"))
    return ok


if __name__ == "__main__":
    import torch

    device = f"{torch.cuda.get_device_name(0)} (torch {torch.__version__})"
    sys.exit(0 if main(Path(sys.argv[1]), device) else 1)
