#!/usr/bin/env bash
# The whole GPU check, on a machine with an NVIDIA GPU: every test in tests/ (tests/gpu
# included) and nbval over every notebook under each backend, then one summary table.
#
#   bash scripts/gpu_check.sh                 # everything, in under 10 minutes on an H100
#   GPU_CHECK_WORKERS=4 bash scripts/gpu_check.sh
#   bash scripts/gpu_check.sh -k speed       # extra arguments go to the tests' pytest
#
# Seven parts run at once on the one GPU, as workshop seats share one: the test suite
# (spread over GPU_CHECK_WORKERS processes with pytest-xdist where it is installed), and the
# notebooks under WD_TEACH_BACKEND=pycuda and =numba, each backend's notebooks in three parts
# of about equal time (00-04 with 06, 08 and 10; 05 with 11; 07 with 09). On an H200 x4 host
# beside heavy side jobs the two halves this replaced took 420-513 s, the second cut off at 510 s;
# the thirds' times are in the table each run prints. Logs and JUnit XML go to
# $GPU_CHECK_OUT (default artifacts/gpu_check). Each part is
# interrupted after GPU_CHECK_TIMEOUT seconds (default 540; pytest then still writes what it
# found) and counts as failed; the summary then names the tests still running when it was cut
# off, and $GPU_CHECK_OUT/progress/ holds each test worker's start and end times, the
# Python stacks of any test that ran past 240 s, and every 240 s those of each process the
# tests started that imports wd_teach (a notebook's kernel, a seed's process: pid-*.stacks).
# Exit status 0 only if every part passed.
# A room's quick version (bench/room.py --seats 2 --small: two seats training at once,
# each under a per-seat memory limit) runs in the tests part, tests/gpu/test_seat_memory_gpu.py.
set -uo pipefail
cd "$(dirname "$0")/.."
out="${GPU_CHECK_OUT:-artifacts/gpu_check}"
workers="${GPU_CHECK_WORKERS:-10}"
seconds="${GPU_CHECK_TIMEOUT:-540}"
extra=("$@")
mkdir -p "$out"

if ! python -c "import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)"; then
  echo "gpu_check: torch sees no CUDA GPU here. Run it on a GPU machine; on a CPU," \
       "bash scripts/test.sh is the check." >&2
  exit 2
fi
python -c "import pycuda" 2>/dev/null || {
  echo "gpu_check: PyCUDA is not installed; both backends are checked, so install it" \
       "first (pip install 'wd-teach[pycuda]', which needs nvcc)." >&2
  exit 2
}

# An installed package outside the range pyproject.toml asks for fails many tests far from
# its cause (pandas 3 under rliable's arch: nine failures, all "deprecate_kwarg()"): say so
# first, and stop. A missing one is only named: the tests that need it skip and say why.
python - <<'PY' || exit 2
import sys
from importlib import metadata

from packaging.requirements import Requirement

wrong, missing = [], []
for line in metadata.requires("wd-teach") or []:
    req = Requirement(line)
    if req.marker is not None and not req.marker.evaluate({"extra": ""}):
        continue
    try:
        have = metadata.version(req.name)
    except metadata.PackageNotFoundError:
        missing.append(req.name)
        continue
    if not req.specifier.contains(have, prereleases=True):
        wrong.append(f"{req.name} {have} (wd-teach needs {req.name}{req.specifier})")
if missing:
    print("gpu_check: not installed here:", ", ".join(missing), file=sys.stderr)
if wrong:
    print("gpu_check: installed outside wd-teach's requirements: " + "; ".join(wrong)
          + ". Install the right versions first (pip install -e '.[dev]' does).",
          file=sys.stderr)
    sys.exit(1)
PY

# The test workers and the six notebook runs share the machine's cores: each gets its share
# of torch/OpenMP threads, or every process spins up one per core and all slow to a crawl.
parts=$(( workers + 6 ))
export OMP_NUM_THREADS="${OMP_NUM_THREADS:-$(( $(nproc) / parts > 0 ? $(nproc) / parts : 1 ))}"
spread=()
python -c "import xdist" 2>/dev/null && spread=(-n "$workers")
# worksteal (pytest-xdist 3.2+) hands a slow worker's queued tests to idle ones; and
# tests/conftest.py spreads the twelve notebook runs (a minute or more each) evenly through
# the tests, so that no worker's share holds several of them side by side.
python -c "import xdist, sys; sys.exit(tuple(map(int, xdist.__version__.split('.')[:2])) < (3, 2))" \
  2>/dev/null && spread+=(--dist worksteal)
limit=()
python -c "import pytest_timeout" 2>/dev/null && limit=(--timeout 420)

part() {  # part NAME ENV... -- pytest args: run pytest, log, and time it
  local name="$1" start=$SECONDS
  shift
  timeout -s INT -k 20 "$seconds" env "$@" -p no:cacheprovider --durations=15 \
    --junitxml="$out/$name.xml" >"$out/$name.log" 2>&1
  echo "$?" >"$out/$name.rc"
  echo $((SECONDS - start)) >"$out/$name.seconds"
}

part tests WD_TEACH_GPU_CHECK=1 WD_TEACH_TEST_PROGRESS="$out/progress" \
  python -m pytest tests -q "${spread[@]}" "${limit[@]}" "${extra[@]}" &
thirds=("notebooks/0[0-4]_*.ipynb notebooks/06_*.ipynb notebooks/08_*.ipynb notebooks/10_*.ipynb"
        "notebooks/05_*.ipynb notebooks/11_*.ipynb" "notebooks/07_*.ipynb notebooks/09_*.ipynb")
for backend in pycuda numba; do
  for third in 1 2 3; do
    # shellcheck disable=SC2086  # the glob is meant to expand
    part "notebooks-$backend-$third" WD_TEACH_BACKEND=$backend python -m pytest ${thirds[third-1]} \
      -q --nbval-lax --nbval-current-env --nbval-kernel-startup-timeout 180 "${limit[@]}" &
  done
done
wait

python scripts/gpu_check_summary.py "$out"
