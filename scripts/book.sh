#!/usr/bin/env bash
# The book: every notebook executed on this machine (small sizes on a CPU, as in CI) and
# rendered to static HTML, with an index page and the teacher's guide, into build/book/
# (BOOK_OUT picks another folder). Open build/book/index.html; to publish, serve the folder
# as it is (GitHub Pages, any static host).
#
#   bash scripts/book.sh                  # build/book/, as many notebooks at once as cores
#   BOOK_OUT=public bash scripts/book.sh --jobs 1
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/venv.sh dev
python scripts/book.py --out "${BOOK_OUT:-build/book}" --jobs "$(nproc)" "$@"
