# Sourced by start.sh and test.sh: make .venv (or $VENV) with wd-teach installed, and
# activate it. $1 names the extras to install (e.g. "dev" or "pycuda,dev").
#
# torch is installed first and on its own: TORCH_SPEC (default torch==2.13.0) picks the
# build, so a bare `torch` requirement does not pull a multi-GB CUDA build onto a CPU box.
VENV="${VENV:-.venv}"
if [ ! -x "$VENV/bin/python" ]; then
  python3 -m venv "$VENV"
fi
. "$VENV/bin/activate"
python -m pip install -q --upgrade pip
python -c "import torch" 2>/dev/null || python -m pip install -q "${TORCH_SPEC:-torch==2.13.0}"
extras="${1:-}"
# numba-cuda loads the CUDA runtime (libcudart.so.13) even to run on its simulator. Where no
# CUDA 13 toolkit provides it (a laptop, a bare container), the cu13 extra brings it from pip.
if [[ ",$extras," != *,cu12,* && ",$extras," != *,cu13,* && ",$extras," != *,dev,* ]] \
    && ! ldconfig -p 2>/dev/null | grep -q 'libcudart\.so\.13' \
    && ! ls /usr/local/cuda*/lib64/libcudart.so.13 >/dev/null 2>&1; then
  extras="${extras:+$extras,}cu13"
fi
python -m pip install -q -e ".${extras:+[$extras]}"
