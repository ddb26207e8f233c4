#!/usr/bin/env bash
# The book: every lesson, the teacher's guide, docs/architecture.md and README's sections as
# static HTML with a table of contents and search on every page, into build/book/ (BOOK_OUT
# picks another folder). Open build/book/index.html (from disk works: no server, no network);
# to publish, serve the folder as it is (GitHub Pages, any static host).
#
# BOOK_EXECUTE=1 (the default) runs every notebook here first (on a CPU: small sizes, as in
# CI); BOOK_EXECUTE=0 runs nothing and shows the outputs saved in the notebooks (say, run on
# a GPU and saved), refusing a notebook with a cell never run.
#
#   bash scripts/book.sh                  # build/book/, as many notebooks at once as cores
#   BOOK_OUT=public bash scripts/book.sh --jobs 1
#   BOOK_EXECUTE=0 bash scripts/book.sh   # the saved outputs, in seconds
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/venv.sh dev
python scripts/book.py --out "${BOOK_OUT:-build/book}" --jobs "$(nproc)" "$@"
