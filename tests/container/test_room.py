"""A room of three seats from docker/room.sh: one seat, started from its definition, answers
its health check with its own token, port and work volume."""

import shlex
import subprocess
from pathlib import Path

import pytest
from browser.lab_driver import free_port, status, stop, wait_until_up
from workshop_image import IMAGE, health_command, lab_command

pytestmark = pytest.mark.container
ROOM = Path(__file__).resolve().parents[2] / "docker" / "room.sh"


def seat_definitions(first_port: int) -> list[list[str]]:
    done = subprocess.run(["bash", str(ROOM), "--dry-run", "--image", IMAGE, "--first-port",
                           str(first_port), "3"], capture_output=True, text=True, check=True)
    return [shlex.split(line) for line in done.stdout.splitlines()
            if line.startswith("docker run")]


def values(command: list[str], flag: str) -> list[str]:
    return [command[i + 1] for i, word in enumerate(command) if word == flag]


def test_a_seat_started_from_its_definition_answers_its_health_check(image_config, container,
                                                                     work, tmp_path):
    seats = seat_definitions(first_port=free_port())
    assert len(seats) == 3
    for flag in ("--publish", "--volume", "--name"):
        assert len({values(seat, flag)[0] for seat in seats}) == 3
    seat = seats[0]
    assert seat[-1] == IMAGE
    env = dict(e.split("=", 1) for e in values(seat, "--env"))
    assert len({e for s in seats for e in values(s, "--env")}) == 6  # ports and tokens differ
    volume, inside = values(seat, "--volume")[0].split(":")
    host_port, port = values(seat, "--publish")[0].split(":")
    # With the host's network (the only network here) the seat listens on its own port.
    assert host_port == port == env["JUPYTER_PORT"]
    server = container.start(lab_command(image_config), tmp_path / "seat.log", env,
                             [(work, inside)])
    base_url = f"http://127.0.0.1:{port}"
    try:
        wait_until_up(base_url, env["JUPYTER_TOKEN"], server)
        health = container.run(health_command(image_config), env={"JUPYTER_PORT": port})
        assert health.returncode == 0, health.stdout + health.stderr
        assert status(base_url, "not-this-seats-token") is None
        assert (work / "00_welcome.ipynb").is_file(), f"volume {volume} did not get the lessons"
    finally:
        stop(server)
