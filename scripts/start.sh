#!/usr/bin/env bash
# Quick start: set up a virtual environment in .venv (once) and run the main job.
#
#   bash scripts/start.sh            # CPU or GPU; Numba everywhere
#   EXTRAS=pycuda bash scripts/start.sh   # on a GPU machine with nvcc: PyCUDA too
#
# The main job checks the machine (wd-teach doctor) and trains CartPole end to end with PPO
# (wd-teach train): on a GPU with its kernels, on a CPU with the NumPy env at toy size (about
# a minute on two cores). Metrics, a learning curve and a checkpoint land in runs/cartpole/;
# run it again and --force replaces that run (wd-teach train never overwrites a run unasked).
# `wd-teach demo` (a kernel on every backend, checked against NumPy) is still there.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/venv.sh "${EXTRAS:-}"
wd-teach doctor
wd-teach train cartpole --out runs/cartpole --force  # re-running replaces the last quick-start run
echo
# The venv is active only inside this script: the hint names its jupyter, so that it works
# as it is in the shell that ran the script.
echo "Next: .venv/bin/jupyter lab notebooks/   (start with 00_welcome.ipynb)"
echo "      or first: source .venv/bin/activate, then: jupyter lab notebooks/"
