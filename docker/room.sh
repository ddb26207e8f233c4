#!/usr/bin/env bash
# A room of seats on one GPU host: one workshop container per learner, each with its own
# port, token and work volume. Prints the table of seat, URL and token for the teacher.
#
#   bash docker/room.sh 20                      # 20 seats sharing every GPU of this host
#   bash docker/room.sh --gpus per-seat 4       # seat i gets GPU i-1 only (needs 4 GPUs)
#   bash docker/room.sh --dry-run 3             # print the commands and the table; start nothing
#   bash docker/room.sh --stop 20               # remove the seats' containers (volumes stay)
#
# Options: --image IMAGE (default wd-teach:latest), --first-port PORT (default 8801; seat i
# gets PORT+i-1), --host NAME (for the URLs; default this host's name), --engine docker|podman
# (podman reaches GPUs through CDI: nvidia-ctk cdi generate). Keep the table: it holds the
# tokens (e.g. `bash docker/room.sh 20 | tee room.txt`).
set -euo pipefail

usage() { sed -n '2,14p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2; }

image="${WD_TEACH_IMAGE:-wd-teach:latest}"
first_port=8801
host="$(hostname -f 2>/dev/null || hostname)"
engine=docker
gpus=shared
dry_run=false
stop=false
while [ $# -gt 0 ]; do
  case "$1" in
    --dry-run) dry_run=true ;;
    --stop) stop=true ;;
    --gpus) gpus="${2:?--gpus needs shared or per-seat}"; shift ;;
    --image) image="${2:?--image needs a name}"; shift ;;
    --first-port) first_port="${2:?--first-port needs a number}"; shift ;;
    --host) host="${2:?--host needs a name}"; shift ;;
    --engine) engine="${2:?--engine needs docker or podman}"; shift ;;
    -h|--help) usage ;;
    -*) echo "room.sh: unknown option $1" >&2; usage ;;
    *) break ;;
  esac
  shift
done
[ $# -eq 1 ] || usage
seats="$1"
case "$seats" in ''|*[!0-9]*|0) echo "room.sh: SEATS must be a number above 0, not '$seats'" >&2; exit 2 ;; esac
case "$first_port" in ''|*[!0-9]*) echo "room.sh: --first-port must be a number" >&2; exit 2 ;; esac
case "$gpus" in shared|per-seat) ;; *) echo "room.sh: --gpus is shared or per-seat, not '$gpus'" >&2; exit 2 ;; esac
case "$engine" in docker|podman) ;; *) echo "room.sh: --engine is docker or podman, not '$engine'" >&2; exit 2 ;; esac
if [ $((first_port + seats - 1)) -gt 65535 ]; then
  echo "room.sh: $seats seats from port $first_port run past port 65535" >&2; exit 2
fi

# Run a command (its output, e.g. a container's id, is not needed), or with --dry-run only
# show it, quoted so that it can be pasted.
run() {
  if $dry_run; then
    printf '%q ' "$@" | sed 's/ $//'
    echo
  else
    "$@" >/dev/null
  fi
}

if $stop; then
  for seat in $(seq 1 "$seats"); do
    run "$engine" rm -f "wd-teach-seat-$seat" || true  # a seat that is not there is fine
  done
  exit 0
fi

if [ "$gpus" = per-seat ] && ! $dry_run; then
  have="$(nvidia-smi -L 2>/dev/null | grep -c '^GPU' || true)"
  if [ "$have" -lt "$seats" ]; then
    echo "room.sh: --gpus per-seat needs a GPU per seat: $seats seats, $have GPUs here." \
      "Use --gpus shared, or fewer seats." >&2
    exit 1
  fi
fi

gpu_flags() {  # the flags that give seat $1 its GPUs
  local which=all
  [ "$gpus" = per-seat ] && which=$(($1 - 1))
  if [ "$engine" = podman ]; then
    echo "--device nvidia.com/gpu=$which"
  elif [ "$which" = all ]; then
    echo "--gpus all"
  else
    echo "--gpus device=$which"
  fi
}

table="$(printf '%-5s %-6s %-48s %s' seat port token url)"
for seat in $(seq 1 "$seats"); do
  port=$((first_port + seat - 1))
  token="$(od -An -N24 -tx1 /dev/urandom | tr -d ' \n')"
  # The seat listens on its own port inside too, so the same definition also serves where
  # the container shares the host's network.
  # shellcheck disable=SC2046  # gpu_flags gives separate words on purpose
  run "$engine" run --detach --name "wd-teach-seat-$seat" --restart unless-stopped \
    --label wd-teach.seat="$seat" $(gpu_flags "$seat") \
    --publish "$port:$port" --env JUPYTER_PORT="$port" --env JUPYTER_TOKEN="$token" \
    --volume "wd-teach-seat-$seat:/home/learner/work" "$image"
  table+=$'\n'"$(printf '%-5s %-6s %-48s %s' "$seat" "$port" "$token" \
    "http://$host:$port/lab?token=$token")"
done
$dry_run && echo
echo "$table"
