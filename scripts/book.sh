#!/usr/bin/env bash
# The book: every lesson, the teacher's guide, docs/architecture.md and README's sections as a
# Jupyter Book 2 (MyST) site, with a table of contents and full-text search, into build/book/
# (BOOK_OUT picks another folder). It needs Node.js 20 or newer and npm: the site theme in
# docs/book-theme/ is installed from npm and built the first time (a few minutes), then reused.
# Serve the folder to read it (`python -m http.server -d build/book`, then
# http://localhost:8000; no network needed); to publish, serve it as it is (GitHub Pages: build
# with BASE_URL=/<repository name>).
#
# Nothing is executed: the book shows the outputs saved in the notebooks (say, run on a GPU
# and saved). BOOK_EXECUTE=1 runs every notebook here first (on a CPU: small sizes).
#
#   bash scripts/book.sh                  # build/book/, the saved outputs
#   BOOK_OUT=public bash scripts/book.sh
#   BOOK_EXECUTE=1 bash scripts/book.sh   # every notebook run here, as many at once as cores
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/venv.sh dev
python scripts/book.py --out "${BOOK_OUT:-build/book}" --jobs "$(nproc)" "$@"
