#!/usr/bin/env bash
# Quick start: set up a virtual environment in .venv (once) and run the main job.
#
#   bash scripts/start.sh            # CPU or GPU; Numba everywhere
#   EXTRAS=pycuda bash scripts/start.sh   # on a GPU machine with nvcc: PyCUDA too
#
# The main job checks the machine (wd-teach doctor) and steps a particle world with a
# kernel on every backend that runs here, checked against NumPy (wd-teach demo).
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/venv.sh "${EXTRAS:-}"
wd-teach doctor
wd-teach demo
echo
echo "Next: jupyter lab notebooks/   (start with 00_welcome.ipynb)"
