#!/usr/bin/env bash
# The workshop image's entrypoint.
#
#   lab (the default)  JupyterLab on $JUPYTER_PORT (8888), the lessons in $WD_TEACH_WORK as
#                      its start folder, the token from $JUPYTER_TOKEN (a new one, printed
#                      here, when it is unset)
#   health             exit 0 when JupyterLab answers /api/status with the token (HEALTHCHECK)
#   anything else      run as a command: `wd-teach doctor`, `bash`, ...
set -euo pipefail

work="${WD_TEACH_WORK:-$HOME/work}"
port="${JUPYTER_PORT:-8888}"
token_file="$HOME/.local/share/wd-teach/jupyter-token"

case "${1:-lab}" in
  lab)
    mkdir -p "$work" "$(dirname "$token_file")"
    # Lessons the volume lacks are copied in; the learner's edited copies are kept.
    for lesson in /opt/wd-teach/notebooks/*; do
      [ -e "$work/${lesson##*/}" ] || cp -r "$lesson" "$work/"
    done
    if [ -z "${JUPYTER_TOKEN:-}" ]; then
      JUPYTER_TOKEN="$(python -c 'import secrets; print(secrets.token_hex(24))')"
      echo "JUPYTER_TOKEN was not set; this server's token is: $JUPYTER_TOKEN"
    fi
    export JUPYTER_TOKEN
    (umask 077 && printf '%s\n' "$JUPYTER_TOKEN" >"$token_file")
    echo "JupyterLab on port $port: open http://<this host>:$port/lab and give the token."
    exec jupyter lab --no-browser --ip="${JUPYTER_IP:-0.0.0.0}" --port="$port" \
      --ServerApp.port_retries=0 --ServerApp.root_dir="$work"
    ;;
  health)
    token="${JUPYTER_TOKEN:-$(cat "$token_file" 2>/dev/null || true)}"
    exec curl -fsS -o /dev/null --max-time 4 -H "Authorization: token $token" \
      "http://127.0.0.1:$port/api/status"
    ;;
  *)
    exec "$@"
    ;;
esac
