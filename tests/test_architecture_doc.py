"""docs/architecture.md names only what exists: every path it quotes is in the repository."""

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DOC = ROOT / "docs" / "architecture.md"


def quoted_paths(text: str) -> set[str]:
    """Backquoted words that are paths: a file with a suffix, or a folder ending in '/'."""
    found = set()
    for word in re.findall(r"`([^`\s]+)`", text):
        word = word.split("::")[0]
        if re.fullmatch(r"[\w./-]+(\.(py|md|cu|cuh|yaml|ipynb)|/)", word) and "NAME" not in word \
                and "NN_" not in word:  # NAME, NN_: a new file's pattern, not a path
            found.add(word)
    return found


#: Folders a bare name on the page may sit in: the package, its layers, an env's folder.
PLACES = ("", "wd_teach", "wd_teach/train", "wd_teach/train/algorithms", "wd_teach/*",
          "envs/*")


def exists(path: str) -> bool:
    return any(any(ROOT.glob(f"{place}/{path}".lstrip("/"))) for place in PLACES)


def test_every_path_in_the_architecture_page_exists():
    paths = quoted_paths(DOC.read_text())
    assert len(paths) > 15  # the page does quote its paths
    missing = sorted(p for p in paths if not exists(p))
    assert not missing, f"docs/architecture.md names paths that do not exist: {missing}"


def test_the_fast_floor_files_are_all_on_the_page():
    text = DOC.read_text()
    for path in sorted((ROOT / "wd_teach" / "fast").glob("*.py")):
        if path.name != "__init__.py":
            assert f"fast/{path.name}" in text, f"docs/architecture.md does not show {path.name}"
