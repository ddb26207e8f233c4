"""Put the Colab badge and install cell at the top of notebooks, and point the documents'
Colab links and install sources at the repository (all made by wd_teach.lessons.colab from the
repository URL in pyproject.toml's [project.urls] Homepage, the one place it lives).

    python scripts/colab_cells.py                      # every notebook, and DOCUMENTS
    python scripts/colab_cells.py notebooks/07_*.ipynb # some notebooks (and DOCUMENTS)
    python scripts/colab_cells.py --check              # exit 1, naming each one out of date

Run it after adding a notebook or changing the repository URL; tests/test_colab.py fails
until every notebook carries the cells and every document the links.
"""

import argparse
import json
import sys
from pathlib import Path

import tomllib

from wd_teach.lessons.colab import place_cells, relink

REPO = Path(__file__).resolve().parents[1]
#: Documents whose Colab links and `pip install git+...` sources follow the repository URL.
DOCUMENTS = ["README.md", "docs/teaching.md", "notebooks/README.md"]


def repository() -> str:
    """The repository URL: pyproject.toml's [project.urls] Homepage, the one place it lives."""
    pyproject = tomllib.loads((REPO / "pyproject.toml").read_text())
    return pyproject["project"]["urls"]["Homepage"]


def notebook_text(notebook: dict) -> str:
    """A notebook as nbformat writes it, so a rewrite changes only the cells it touches."""
    return json.dumps(notebook, indent=1, sort_keys=True, ensure_ascii=False) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("notebooks", nargs="*", type=Path)
    parser.add_argument("--check", action="store_true", help="change nothing; list stale ones")
    args = parser.parse_args(argv)
    paths = args.notebooks or sorted((REPO / "notebooks").glob("*.ipynb"))
    stale = []
    for path in paths:
        text = path.read_text(encoding="utf-8")
        notebook = json.loads(text)
        notebook["cells"] = place_cells(notebook["cells"], path.name, repository())
        if notebook_text(notebook) != text:
            stale.append((path, notebook_text(notebook)))
    for document in (REPO / name for name in DOCUMENTS):
        text = document.read_text(encoding="utf-8")
        if relink(text, repository()) != text:
            stale.append((document, relink(text, repository())))
    if not args.check:
        for path, text in stale:
            path.write_text(text, encoding="utf-8")
    verb = "out of date" if args.check else "updated"
    for path, _ in stale:
        print(f"{verb}: {path}")
    return 1 if args.check and stale else 0


if __name__ == "__main__":
    sys.exit(main())
