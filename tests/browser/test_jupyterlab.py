"""JupyterLab in a real browser: a learner opens notebook 01, runs every cell, and sees no error.

nbval runs the notebooks' code; this runs them the way a learner does, through JupyterLab's
page in chromium, and keeps a screenshot of the executed notebook in artifacts/.
"""

import secrets
import shutil
from pathlib import Path

import pytest
from browser.lab_driver import (
    ARTIFACTS,
    browser_missing,
    free_port,
    run_notebook,
    start_lab,
    stop,
    wait_until_up,
)

NOTEBOOKS = Path(__file__).resolve().parents[2] / "notebooks"

pytestmark = [pytest.mark.browser, pytest.mark.slow,
              pytest.mark.skipif(browser_missing() is not None, reason=str(browser_missing()))]


@pytest.fixture
def lab(tmp_path):
    """JupyterLab from this environment, serving a copy of the notebooks (it saves into it)."""
    root = tmp_path / "lessons"
    shutil.copytree(NOTEBOOKS, root)
    port, token = free_port(), secrets.token_hex(16)
    server = start_lab(root, port, token, tmp_path / "jupyterlab.log")
    base_url = f"http://127.0.0.1:{port}"
    try:
        wait_until_up(base_url, token, server)
        yield base_url, token
    finally:
        stop(server)


def test_notebook_01_runs_in_jupyterlab_without_errors(lab):
    base_url, token = lab
    screenshot = ARTIFACTS / "jupyterlab-01_data_push.png"
    found = run_notebook(base_url, token, "01_data_push.ipynb", screenshot)
    print(f"\nscreenshot: {screenshot}")
    assert found["errors"] == [] and found["shown_tracebacks"] == []
    assert found["not_run"] == [], f"code cells that never ran: {found['not_run']}"
    assert found["code_cells"] > 10
    assert screenshot.stat().st_size > 10_000
