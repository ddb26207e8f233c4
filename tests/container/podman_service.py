"""Podman's Docker-compatible API on a unix socket, for DockerSpawner where no Docker engine
runs: `podman system service`, with the settings these machines need to start containers.

`podman run` fails here as Podman sets it up by default (docker/README.md): crun cannot
manage this host's mix of cgroup v1 and v2, and without CAP_SYS_RESOURCE no runtime may
raise a container's limits past the host's own. So the service runs with runc and gives
containers open-file and process limits within the host's (a containers.conf of its own,
through CONTAINERS_CONF; the host's Podman settings are left as they are).
"""

from __future__ import annotations

import os
import resource
import shutil
import signal
import subprocess
import time
from contextlib import contextmanager
from pathlib import Path

#: Limits a seat gets (within the host's hard limits, which no container may pass).
NOFILE, NPROC = 8192, 8192


def containers_conf(folder: Path) -> Path:
    nofile = min(NOFILE, resource.getrlimit(resource.RLIMIT_NOFILE)[1])
    nproc = min(NPROC, resource.getrlimit(resource.RLIMIT_NPROC)[1])
    conf = folder / "containers.conf"
    conf.write_text(
        "[containers]\n"
        f'default_ulimits = ["nofile={nofile}:{nofile}", "nproc={nproc}:{nproc}"]\n'
        "[engine]\n"
        'runtime = "runc"\n'
        'cgroup_manager = "cgroupfs"\n')
    return conf


def missing() -> str | None:
    """What this needs and lacks, or None."""
    for tool, package in (("podman", "podman"), ("runc", "runc")):
        if shutil.which(tool) is None:
            return f"no {tool}: apt-get install -y {package}"
    return None


@contextmanager
def podman_api(folder: Path, log: Path, timeout: float = 60):
    """Serve Podman's API on folder/podman.sock until the block ends; yields DOCKER_HOST."""
    import docker

    socket = folder / "podman.sock"
    env = {**os.environ, "CONTAINERS_CONF": str(containers_conf(folder))}
    with open(log, "wb") as out:
        service = subprocess.Popen(["podman", "system", "service", "--time=0",
                                    f"unix://{socket}"], stdout=out, stderr=subprocess.STDOUT,
                                   env=env, start_new_session=True)
    url = f"unix://{socket}"
    try:
        deadline = time.monotonic() + timeout
        while True:
            if service.poll() is not None:
                raise RuntimeError(f"podman system service exited with {service.returncode}: "
                                   f"{log.read_text()[-2000:]}")
            try:
                docker.DockerClient(base_url=url).ping()
                break
            except Exception:  # not listening yet
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.5)
        yield url
    finally:
        os.killpg(service.pid, signal.SIGTERM)
        service.wait(timeout=30)
