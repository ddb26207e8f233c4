#!/bin/bash
# One GPU call, WarpDrive 2.7.1 beside two trees of wd-teach at 500 envs of Tag continuous:
# OLD, a tree before a change (e.g. `git archive cf3c4c0 wd_teach envs bench pyproject.toml
# setup.py | tar -x -C OLD`), and this one. Rows alternate between the trees, so a drift of
# the card shows as a difference between two rows of one tree. Run from the repository root
# after `source .device/setup.sh`; results go to OUT (default results/):
#
#     bash bench/before_after.sh OLD [OUT]
#
# ANCHOR names WarpDrive's anchor folder (default .device/anchor); NUMBA_ROWS=0 leaves out
# the Numba rows (a shorter call).
#
# Made bench/results/versus_floors_h200.json (the two floors, 2026-11-27).
set -u
old_tree="$(cd "$1" && pwd)"
out="${2:-results}"
mkdir -p "$out"
export WD_TEACH_SIZES=full PYTHONUNBUFFERED=1
site="${PYTHONPATH:-}"
copy=/tmp/before_tree
rm -rf "$copy" && mkdir -p "$copy" && cp -r "$old_tree"/. "$copy"/
ln -sfn "$copy/envs" "$copy/wd_teach_envs"  # envs/ imports as wd_teach_envs, as installed
rows() { grep -E "env steps/s|^warpdrive|Error" | cut -c1-220; }
after() { PYTHONPATH="$PWD:$site" timeout 200 python3 bench/versus_warpdrive.py "$@" 2>&1 | rows; }
before() { (cd "$copy" && PYTHONPATH="$copy:$site" timeout 200 python3 bench/versus_warpdrive.py "$@" 2>&1 | rows); }
after "$out/v_wd.json" --anchor "${ANCHOR:-.device/anchor}" --envs 500 --settings a2c-bf16-shared --backends pycuda
before "$out/v_old1.json" --anchor none --envs 500 --settings a2c-bf16-shared --backends pycuda
[ "${NUMBA_ROWS:-1}" = 0 ] || after "$out/v_new2.json" --anchor none --envs 500 \
  --settings a2c-bf16-shared,plain-a2c-bf16-shared,plain-a2c-bf16 --backends numba
before "$out/v_old2.json" --anchor none --envs 500 --settings ppo-bf16-traj-shared-compiled \
  --backends pycuda
after "$out/v_new3.json" --anchor none --envs 500 \
  --settings ppo-bf16-traj-shared-compiled,plain-a2c-bf16-shared,plain-a2c-bf16,a2c-bf16 \
  --backends pycuda
