#!/bin/bash
# The seed's headline size in one GPU call: 2,000 envs of 1,000 agents of Tag (issue 34).
# Each stage runs under its own time limit, and a stage that runs out of time prints where
# every thread of its Python was (faulthandler), so a hang is named, not guessed. Run from
# the repository root after `source .device/setup.sh` (or .gpu/setup.sh):
#
#     bash bench/headline.sh [OUT] [ANCHOR]      # OUT: results folder (default results/)
#
# Stages, in order: the env step alone at 110, 500 and 1,000 agents (where the time goes as
# the game grows); the nearest-neighbour search alone, tiled against the spatial grid
# (bench/nearest.py, both kernel backends: NEAREST_BACKENDS, NEAREST_AGENTS); the step's
# GPU time kernel by kernel at 1,000 agents, both games, the games' search set as below
# (bench/env_kernels.py, on a GPU); the continuous
# game's observe, lesson 06's against its twin behind the fast door, on one state
# (bench/observe_twin.py, grid search, both kernel backends, OBSERVE_AGENTS); then, with the
# games' search set to HEADLINE_SEARCH (default grid: nearest.cu's grid, launched before the
# observe kernel; tiles: the search inside it, as the first stage has), the step at 1,000
# both games and both backends; the rollout; end-to-end
# training (trainer.steps=TRAIN_STEPS, default 20, to fit one 80 GB GPU); WarpDrive 2.7.1's
# own trainer at the same size (10 taggers + 990 runners), from ANCHOR (default
# .device/anchor). Each writes OUT/<stage>.log and, where it measures, OUT/<stage>.json.
# The limits allow for each game's initial state, made on the host (20 to 40 s at 1,000
# agents; bench/NOTES.md). HEADLINE_STAGES=env-both,rollout (names, commas) runs only
# those stages, so the whole can be split over two device calls; unset, all of them.
# NEAREST_THREADS=1024,256 times the search alone at each block size (bench/nearest.py
# --threads), SEARCH_THREADS=1024,256 the step with the grid search at each (the
# observe-twin stage, bench/observe_twin.py --grid-threads).
# Exit status: the number of stages that failed or ran out of time.
set -u
out="${1:-results}"
anchor="${2:-.device/anchor}"
envs="${HEADLINE_ENVS:-2000}"
steps="${TRAIN_STEPS:-20}"
one="${HEADLINE_BACKEND:-pycuda}"          # HEADLINE_BACKEND=numpy HEADLINE_BACKENDS=numpy
both="${HEADLINE_BACKENDS:-pycuda,numba}"  # HEADLINE_ENVS=2: a smoke test on a CPU
kernel_backends="${NEAREST_BACKENDS:-pycuda,numba}"
nearest_agents="${NEAREST_AGENTS:-110,500,1000}"
observe_agents="${OBSERVE_AGENTS:-1000}"
nearest_threads="${NEAREST_THREADS:-1024}"
search_threads="${SEARCH_THREADS:-}"
search="env.params.search=${HEADLINE_SEARCH:-grid}"
mkdir -p "$out"
export PYTHONUNBUFFERED=1
failed=0

asked="${HEADLINE_STAGES:-}"
asked="${asked// /}"  # "env-both, rollout" names two stages too
only=",${asked:-all},"
stages="env-agents nearest env-kernels observe-twin env-both env-grid rollout train warpdrive"
for name in ${asked//,/ }; do
  [[ " $stages " == *" $name "* ]] || {
    echo "headline.sh: no stage named '$name' in HEADLINE_STAGES; the stages: $stages" >&2
    exit 2
  }
done

stage() {  # stage NAME SECONDS python-args...: run, and dump the stacks before the limit
  local name="$1" seconds="$2" start=$SECONDS
  shift 2
  if [ "$only" != ",all," ] && [[ "$only" != *",$name,"* ]]; then
    echo "=== $name: not in HEADLINE_STAGES, skipped"
    return
  fi
  echo "=== $name (limit ${seconds} s)"
  timeout -k 10 "$seconds" python3 -X faulthandler -c "
import faulthandler, runpy, sys
faulthandler.dump_traceback_later($seconds - 8, exit=True)  # where it is, if it hangs
sys.argv = sys.argv[1:]
runpy.run_path(sys.argv[0], run_name='__main__') if sys.argv[0].endswith('.py') \
    else runpy.run_module(sys.argv[0], run_name='__main__', alter_sys=True)
" "$@" >"$out/$name.log" 2>&1
  local status=$?
  echo "$name: exit $status after $((SECONDS - start)) s"
  [ "$status" = 0 ] || failed=$((failed + 1))
  grep -E "env steps/s|^ROW|Error|Thread 0x|File \"" "$out/$name.log" | cut -c1-200 | head -25
}

bench() { echo wd_teach.cli bench "$@"; }
# shellcheck disable=SC2046  # the words are meant to split
stage env-agents 200 $(bench env --envs "$envs" --agents 110,500,1000 --backend "$one" \
  --iterations 20 --out "$out/env-agents.json")
stage nearest 120 bench/nearest.py "$out/nearest.json" --envs "$envs" \
  --agents "$nearest_agents" --backends "$kernel_backends" --threads "$nearest_threads"
# Where a step's GPU time goes at 1,000 agents, kernel by kernel (torch.profiler): a GPU only.
if python3 -c "import sys, torch; sys.exit(not torch.cuda.is_available())"; then
  stage env-kernels 240 bench/env_kernels.py "$out/env-kernels.json" --envs "$envs" \
    --env tag_continuous,tag_grid --agents 1000 --backends "$both" --steps 20 --set "$search"
else
  echo "=== env-kernels: skipped (torch sees no CUDA GPU: the profile is of GPU kernels)"
fi
stage observe-twin 240 bench/observe_twin.py "$out/observe-twin.json" --envs "$envs" \
  --agents "$observe_agents" --backends "$kernel_backends" --grid-threads "$search_threads"
stage env-both 240 $(bench env --envs "$envs" --agents 1000 --backend "$both" \
  --iterations 20 --set "$search" --out "$out/env-both.json")
stage env-grid 240 $(bench env --env tag_grid --envs "$envs" --agents 1000 \
  --backend "$both" --iterations 20 --set "$search" --out "$out/env-grid.json")
stage rollout 200 $(bench rollout --envs "$envs" --agents 1000 --backend "$one" \
  --iterations 3 --set "trainer.steps=$steps" --set "$search" --out "$out/rollout.json")
stage train 240 $(bench train --envs "$envs" --agents 1000 --backend "$one" \
  --iterations 3 --set "trainer.steps=$steps" --set "$search" --out "$out/train.json")
if [ -d "$anchor" ]; then  # WarpDrive into /tmp/site, as the anchor's run_warpdrive.sh does
  [ -d /tmp/site/warp_drive ] || {
    python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site "$anchor"/*.whl
    python3 -m pip install -q --no-index --no-deps --no-build-isolation --target /tmp/site \
      "$anchor"/gym-0.26.2.tar.gz >/dev/null 2>&1
  }
  stage warpdrive 150 "$anchor/warpdrive_tag.py" pycuda "$envs" 10 990 100 3
else
  echo "=== warpdrive: skipped (no WarpDrive anchor at $anchor)"
fi
exit "$failed"
