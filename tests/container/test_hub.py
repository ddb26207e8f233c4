"""The one-host JupyterHub of docker/jupyterhub/, for real: JupyterHub from PyPI and
configurable-http-proxy from npm start the workshop image through Podman's Docker API
(DockerSpawner with DOCKER_HOST on `podman system service`); a learner logs in with the
room's password in chromium and runs notebook 01 in a seat of their own; a seat left idle
is stopped by the hub's culler.

The hubs' logs are kept in artifacts/hub.log and artifacts/hub-culling.log, the notebook's
screenshot in artifacts/hub-01_data_push.png.
"""

from __future__ import annotations

import os
import secrets
import shutil
import subprocess
import sys
import time
import urllib.request
from contextlib import contextmanager
from pathlib import Path
from types import SimpleNamespace

import pytest
from browser.lab_driver import ARTIFACTS, browser_missing, free_port, run_notebook, stop
from podman_service import missing, podman_api
from workshop_image import IMAGE

pytestmark = [pytest.mark.container, pytest.mark.browser,
              pytest.mark.skipif(browser_missing() is not None, reason=str(browser_missing()))]

CONFIG = Path(__file__).resolve().parents[2] / "docker" / "jupyterhub" / "jupyterhub_config.py"
LEARNER = "ada"
IDLE_LEARNER = "bob"
PASSWORD = f"room-{secrets.token_hex(8)}"
HUB_LOG = ARTIFACTS / "hub.log"


def wait_for(what: str, done, timeout: float, log: Path) -> None:
    """Wait until done() is true; fail saying `what` did not happen."""
    deadline = time.monotonic() + timeout
    while not done():
        assert time.monotonic() < deadline, f"{what} within {timeout} s: see {log}"
        time.sleep(1)


def hub_answers(url: str, hub: subprocess.Popen) -> bool:
    if hub.poll() is not None:
        raise RuntimeError(f"the hub exited with {hub.returncode}: see {hub.log}")
    try:
        with urllib.request.urlopen(f"{url}/hub/api", timeout=5) as answer:
            return answer.status == 200
    except OSError:
        return False


@contextmanager
def running_hub(folder: Path, docker_host: str, log: Path, **settings: str):
    """The hub as a teacher starts it, from the repository's config and WD_TEACH_HUB_*
    settings (`settings`, e.g. IDLE_TIMEOUT="20", override the test's); only the proxy's API
    port is moved, as the default may be taken here. Yields the hub's URL; on leaving, the
    hub stops its seats (DockerSpawner removes their containers)."""
    port = free_port()
    chosen = {"PASSWORD": PASSWORD, "IMAGE": IMAGE, "GPUS": "none", "PORT": str(port),
              "API_PORT": str(free_port()), "STATE": str(folder), **settings}
    env = {**os.environ, "DOCKER_HOST": docker_host,
           **{f"WD_TEACH_HUB_{name}": value for name, value in chosen.items()}}
    log.parent.mkdir(parents=True, exist_ok=True)
    with open(log, "wb") as out:
        hub = subprocess.Popen(
            [sys.executable, "-m", "jupyterhub", "-f", str(CONFIG),
             f"--ConfigurableHTTPProxy.api_url=http://127.0.0.1:{free_port()}"],
            cwd=folder, env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
    hub.log = log
    url = f"http://127.0.0.1:{port}"
    try:
        wait_for("the hub did not answer", lambda: hub_answers(url, hub), 120, log)
        yield url
    finally:
        stop(hub)


@pytest.fixture(scope="module")
def engine(image_config, tmp_path_factory):
    """Podman's Docker API, as DockerSpawner sees it: DOCKER_HOST, and a client of it."""
    lacking = missing() or (shutil.which("configurable-http-proxy") is None and
                            "no configurable-http-proxy on PATH: npm install -g "
                            "configurable-http-proxy (bash .ci/container installs it)")
    if lacking:
        pytest.fail(lacking)
    import docker

    folder = tmp_path_factory.mktemp("podman")
    with podman_api(folder, folder / "podman-service.log") as docker_host:
        client = docker.DockerClient(base_url=docker_host)
        try:
            yield SimpleNamespace(host=docker_host, client=client)
        finally:  # what the hubs leave: the learners' volumes (and seats, after a failure)
            for user in (LEARNER, IDLE_LEARNER):
                for box in client.containers.list(all=True, filters={"name": f"jupyter-{user}"}):
                    box.remove(force=True)
                for volume in client.volumes.list(filters={"name": f"wd-teach-hub-{user}"}):
                    volume.remove(force=True)
            for volume in client.volumes.list(filters={"name": "wd-teach-hub-exchange"}):
                volume.remove(force=True)  # the room's nbgrader exchange, which every seat mounts


@pytest.fixture(scope="module")
def hub(engine, tmp_path_factory):
    with running_hub(tmp_path_factory.mktemp("hub"), engine.host, HUB_LOG) as url:
        yield SimpleNamespace(url=url, engine=engine.client)


def log_in(hub, page) -> str:
    """Log in through the hub's form as a learner does, wait for their JupyterLab, and
    return a token for their server's REST API (made with the learner's own session)."""
    page.goto(f"{hub.url}/hub/login")
    page.fill("#username_input", LEARNER)
    page.fill("#password_input", PASSWORD)
    page.click("#login_submit")
    page.wait_for_url(f"**/user/{LEARNER}/lab**", timeout=300_000)
    xsrf = next(c["value"] for c in page.context.cookies(f"{hub.url}/hub/")
                if c["name"] == "_xsrf")
    answer = page.request.post(f"{hub.url}/hub/api/users/{LEARNER}/tokens",
                               headers={"X-XSRFToken": xsrf}, data={"note": "REST of the test"})
    assert answer.ok, answer.text()
    return answer.json()["token"]


def test_a_learner_logs_in_and_runs_notebook_01_in_a_seat_of_the_workshop_image(hub):
    screenshot = ARTIFACTS / "hub-01_data_push.png"
    found = run_notebook(f"{hub.url}/user/{LEARNER}", "", "01_data_push.ipynb", screenshot,
                         login=lambda page: log_in(hub, page))
    print(f"\nscreenshot: {screenshot}\nhub log: {HUB_LOG}")
    assert found["errors"] == [] and found["shown_tracebacks"] == []
    assert found["not_run"] == [] and found["code_cells"] > 10
    seat = hub.engine.containers.get(f"jupyter-{LEARNER}")
    assert seat.attrs["Config"]["Image"] == IMAGE
    work = [m for m in seat.attrs["Mounts"] if m["Destination"] == "/home/learner/work"]
    assert work and work[0]["Name"] == f"wd-teach-hub-{LEARNER}", seat.attrs["Mounts"]
    assert seat.exec_run(["id", "-un"]).output.decode().strip() == "learner"
    health = seat.exec_run(["bash", "/opt/wd-teach/docker/entrypoint.sh", "health"])
    assert health.exit_code == 0, health.output.decode()


def test_the_idle_culler_runs_as_a_service_with_its_role(hub):
    """The culler asks the hub for its users at its start; a 200 shows its role suffices."""
    wait_for("no request of the culler was answered", lambda: any(
        "idle-culler@" in line and "200 GET /hub/api/users" in line
        for line in HUB_LOG.read_text().splitlines()), 30, HUB_LOG)


def test_an_idle_seat_is_culled_and_its_work_kept(engine, tmp_path):
    """A hub whose culler stops seats after 10 s without activity: a learner logs in (the
    hub starts their seat) and leaves; the culler stops the seat, its volume stays."""
    import requests

    log = ARTIFACTS / "hub-culling.log"
    with running_hub(tmp_path, engine.host, log, IDLE_TIMEOUT="10") as url:
        session = requests.Session()
        session.get(f"{url}/hub/login", timeout=30)
        answer = session.post(f"{url}/hub/login", timeout=120, data={
            "username": IDLE_LEARNER, "password": PASSWORD, "_xsrf": session.cookies["_xsrf"]})
        assert answer.ok, answer.text[-2000:]

        def seats() -> list:
            return engine.client.containers.list(filters={"name": f"jupyter-{IDLE_LEARNER}"})

        wait_for("no seat started", lambda: bool(seats()), 120, log)
        wait_for("the idle seat was not culled", lambda: not seats(), 120, log)
        assert f"Culling server {IDLE_LEARNER}" in log.read_text()
        assert engine.client.volumes.list(filters={"name": f"wd-teach-hub-{IDLE_LEARNER}"})
