#!/usr/bin/env bash
# Set up .venv with the test tools (once) and run every test a CPU machine can run:
# ruff, pytest over tests/ (Numba kernels on the CUDA simulator, every .cu file through
# nvcc when nvcc is on PATH), and nbval over every notebook at CPU size.
#
#   bash scripts/test.sh             # everything
#   bash scripts/test.sh -k store    # extra arguments go to pytest
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/venv.sh dev
ruff check .
python -m pytest tests notebooks --nbval-lax --nbval-current-env -p no:cacheprovider "$@"
