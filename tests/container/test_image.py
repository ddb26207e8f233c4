"""The workshop image, built from docker/Dockerfile: as its user, the doctor, the quick tests
and notebooks 00-02 pass inside it, and its JupyterLab serves notebook 01 to a browser."""

import secrets

import pytest
from browser.lab_driver import ARTIFACTS, browser_missing, free_port, run_notebook, stop
from browser.lab_driver import wait_until_up as wait_for_lab
from workshop_image import health_command, lab_command

pytestmark = pytest.mark.container

#: The quick tier run inside the image: the package's floors, without the slow tests.
QUICK_TIER = ["tests/test_device.py", "tests/test_data.py", "tests/test_launch.py",
              "tests/test_sampler.py", "tests/test_reset.py"]
NOTEBOOKS = ["notebooks/00_welcome.ipynb", "notebooks/01_data_push.ipynb",
             "notebooks/02_kernel_launch.ipynb"]


def in_source(command: str) -> list[str]:
    return ["bash", "-c", f"cd /opt/wd-teach && {command}"]


def test_image_runs_as_its_user_on_port_8888_with_a_health_check(image_config, container):
    assert image_config["User"].split(":")[0] not in ("", "0", "root")
    assert "8888/tcp" in image_config["ExposedPorts"]
    assert health_command(image_config)[-1] == "health"
    assert container.run(["id", "-un"]).stdout.strip() == "learner"


def test_doctor_reports_the_simulator_and_that_pycuda_needs_a_gpu(container):
    done = container.run(["wd-teach", "doctor"])
    print(done.stdout)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "backends that can run here: numba" in done.stdout
    assert "on: Numba kernels run on the CPU" in done.stdout
    pycuda = next(line for line in done.stdout.splitlines() if line.startswith("PyCUDA"))
    assert "needs a GPU" in pycuda


def test_quick_tests_pass_inside(container):
    done = container.run(in_source("python -m pytest -q -p no:cacheprovider -m 'not slow' "
                                   + " ".join(QUICK_TIER)))
    print(done.stdout[-3000:])
    assert done.returncode == 0, done.stdout[-6000:] + done.stderr[-3000:]


def test_notebooks_00_to_02_pass_nbval_inside(container):
    done = container.run(in_source("python -m pytest -q -p no:cacheprovider --nbval-lax "
                                   "--nbval-current-env " + " ".join(NOTEBOOKS)))
    print(done.stdout[-2000:])
    assert done.returncode == 0, done.stdout[-6000:] + done.stderr[-3000:]


@pytest.mark.browser
@pytest.mark.skipif(browser_missing() is not None, reason=str(browser_missing()))
def test_browser_runs_notebook_01_from_the_images_start_folder(image_config, container, work,
                                                               tmp_path):
    port, token = free_port(), secrets.token_hex(16)
    env = {"JUPYTER_TOKEN": token, "JUPYTER_PORT": port, "JUPYTER_IP": "127.0.0.1"}
    server = container.start(lab_command(image_config), tmp_path / "lab.log", env,
                             [(work, "/home/learner/work")])
    base_url = f"http://127.0.0.1:{port}"
    try:
        wait_for_lab(base_url, token, server)
        health = container.run(health_command(image_config), env={"JUPYTER_PORT": port})
        assert health.returncode == 0, health.stdout + health.stderr
        assert (work / "01_data_push.ipynb").is_file(), "the lessons are not in the start folder"
        screenshot = ARTIFACTS / "container-01_data_push.png"
        found = run_notebook(base_url, token, "01_data_push.ipynb", screenshot)
        print(f"\nscreenshot: {screenshot}")
    finally:
        stop(server)
    assert found["errors"] == [] and found["shown_tracebacks"] == []
    assert found["not_run"] == [] and found["code_cells"] > 10
