#!/usr/bin/env bash
# The workshop image's entrypoint.
#
#   lab (the default)  JupyterLab on $JUPYTER_PORT (8888), the lessons in $WD_TEACH_WORK as
#                      its start folder, the token from $JUPYTER_TOKEN (a new one, printed
#                      here, when it is unset)
#   jupyterhub-singleuser [ARGS]
#                      a seat of a JupyterHub (docker/jupyterhub/): the hub's server, which
#                      takes its URL, port and token from the hub's JUPYTERHUB_* variables,
#                      with the lessons in $WD_TEACH_WORK as its start folder; by the role
#                      the hub gives (WD_TEACH_ROOM_ROLE), a teacher's seat has the graded
#                      course made in $WD_TEACH_WORK/course, and a learner's seat shows
#                      nbgrader's Assignments page but not the teacher's pages
#   health             exit 0 when the server answers /api/status with its token (HEALTHCHECK)
#   anything else      run as a command: `wd-teach doctor`, `bash`, ...
set -euo pipefail

work="${WD_TEACH_WORK:-$HOME/work}"
port="${JUPYTER_PORT:-8888}"
token_file="$HOME/.local/share/wd-teach/jupyter-token"

# Lessons the work folder (a volume) lacks are copied in; the learner's edited copies are kept.
copy_lessons() {
  mkdir -p "$work"
  for lesson in /opt/wd-teach/notebooks/*; do
    [ -e "$work/${lesson##*/}" ] || cp -r "$lesson" "$work/"
  done
}

# The room's grading (nbgrader; docker/nbgrader_config.py): a teacher's seat gets the course
# made from the lessons the first time; a learner's seat turns off nbgrader's teacher pages
# (Formgrader, creating assignments, the course list) in its own config, which is made anew
# at every start ($HOME is not kept), and keeps the Assignments page to fetch and submit.
room_role() {
  case "${WD_TEACH_ROOM_ROLE:-}" in
    teacher)
      [ -e "$work/course" ] || wd-teach course "$work/course" >/dev/null \
        || echo "entrypoint: could not make the course in $work/course (wd-teach course)" >&2
      ;;
    learner)
      mkdir -p "$HOME/.jupyter/labconfig"
      printf '%s\n' '{"ServerApp": {"jpserver_extensions": {' \
        '"nbgrader.server_extensions.formgrader": false,' \
        '"nbgrader.server_extensions.course_list": false}}}' \
        >"$HOME/.jupyter/jupyter_server_config.json"
      local teacher_pages='"@jupyter/nbgrader:formgrader": true,
        "@jupyter/nbgrader:create-assignment": true, "@jupyter/nbgrader:course-list": true'
      printf '{"disabledExtensions": {%s}, "lockedExtensions": {%s}}\n' "$teacher_pages" \
        "$teacher_pages" >"$HOME/.jupyter/labconfig/page_config.json"
      ;;
  esac
}

case "${1:-lab}" in
  lab)
    copy_lessons
    mkdir -p "$(dirname "$token_file")"
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
  jupyterhub-singleuser)
    copy_lessons
    room_role
    shift
    exec jupyterhub-singleuser --ServerApp.root_dir="$work" "$@"
    ;;
  health)
    if [ -n "${JUPYTERHUB_SERVICE_URL:-}" ]; then  # a hub's seat: its own URL and token
      url="${JUPYTERHUB_SERVICE_URL%/}" token="${JUPYTERHUB_API_TOKEN:-}"
    else
      url="http://127.0.0.1:$port" token="${JUPYTER_TOKEN:-$(cat "$token_file" 2>/dev/null || true)}"
    fi
    exec curl -fsS -o /dev/null --max-time 4 -H "Authorization: token $token" "$url/api/status"
    ;;
  *)
    exec "$@"
    ;;
esac
