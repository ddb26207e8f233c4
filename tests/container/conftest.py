"""The workshop image, run without a Docker engine: `buildah run` with chroot isolation and
the host's network (docker/README.md says why). Tests here are marked `container` and run only
when asked for (`pytest -m container tests/container`), after the image is built:
`bash .ci/container` does both.
"""

import json
import os
import shutil
import subprocess

import pytest
from workshop_image import IMAGE, Container


def pytest_collection_modifyitems(config, items):
    """Building and running the image takes minutes and root: only with -m container."""
    markexpr = config.option.markexpr or ""
    if "container" in markexpr and "not container" not in markexpr:
        return
    skip = pytest.mark.skip(reason="runs the workshop image: pytest -m container tests/container "
                                   "(after building it; bash .ci/container does both)")
    for item in items:
        if "container" in item.keywords:
            item.add_marker(skip)


@pytest.fixture(scope="session")
def image_config():
    """The image's config (user, entrypoint, health check); fails when it was not built."""
    if shutil.which("buildah") is None or shutil.which("podman") is None:
        pytest.fail("podman and buildah are needed: apt-get install -y podman buildah")
    done = subprocess.run(["podman", "image", "inspect", IMAGE], capture_output=True, text=True)
    if done.returncode:
        pytest.fail(f"no image {IMAGE}: build it first (bash .ci/container does)\n{done.stderr}")
    found = json.loads(done.stdout)[0]
    # podman shows the health check beside the config (Docker's format keeps it in it).
    return {**found["Config"], "Healthcheck": found.get("Healthcheck")
            or found["Config"].get("Healthcheck")}


@pytest.fixture
def container(image_config):
    box = Container(IMAGE)
    yield box
    box.remove()


@pytest.fixture
def work(tmp_path, image_config):
    """A host folder standing in for a seat's work volume, owned by the image's user."""
    folder = tmp_path / "work"
    folder.mkdir()
    uid, _, gid = image_config["User"].partition(":")
    os.chown(folder, int(uid), int(gid or uid))
    return folder
