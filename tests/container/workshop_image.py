"""Run the workshop image without a Docker engine: `buildah run` with chroot isolation and the
host's network (docker/README.md says why; `podman run` fails on these machines)."""

import os
import subprocess
from pathlib import Path

IMAGE = os.environ.get("WD_TEACH_IMAGE", "localhost/wd-teach:ci")
RUN = ["buildah", "run", "--isolation", "chroot", "--network", "host"]


class Container:
    """A working container from the image; `buildah run` runs commands in it."""

    def __init__(self, image: str):
        self.name = subprocess.run(["buildah", "from", "--pull=never", image], check=True,
                                   capture_output=True, text=True).stdout.strip()

    def command(self, args, env=None, volumes=()) -> list[str]:
        flags = [f"--env={k}={v}" for k, v in (env or {}).items()]
        flags += [f"--volume={host}:{inside}" for host, inside in volumes]
        return [*RUN, *flags, self.name, "--", *args]

    def run(self, args, env=None, volumes=(), timeout=900) -> subprocess.CompletedProcess:
        return subprocess.run(self.command(args, env, volumes), capture_output=True, text=True,
                              timeout=timeout)

    def start(self, args, log: Path, env=None, volumes=()) -> subprocess.Popen:
        """A long-running command (a server), in a process group of its own to end it by."""
        with open(log, "wb") as out:
            process = subprocess.Popen(self.command(args, env, volumes), stdout=out,
                                       stderr=subprocess.STDOUT, start_new_session=True)
        process.log = log
        return process

    def remove(self) -> None:
        subprocess.run(["buildah", "rm", self.name], capture_output=True)


def lab_command(image_config) -> list[str]:
    """What the image runs when started: its entrypoint and command (`buildah run` runs only
    what it is given)."""
    return [*image_config["Entrypoint"], *image_config["Cmd"]]


def health_command(image_config) -> list[str]:
    """The image's HEALTHCHECK command."""
    kind, *command = image_config["Healthcheck"]["Test"]
    assert kind == "CMD", image_config["Healthcheck"]
    return command
