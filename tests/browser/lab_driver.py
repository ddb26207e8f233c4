"""Drive JupyterLab in a real browser: open a notebook, run all its cells, check, screenshot.

Used by tests/browser (a JupyterLab started here) and tests/container (JupyterLab served from
the workshop image). The browser is Debian's chromium, driven by Playwright from PyPI; no
browser is downloaded (`playwright install` is never run).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

CHROMIUM = os.environ.get("WD_TEACH_CHROMIUM", "/usr/bin/chromium")
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
                 "--no-first-run", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync"]
#: Where screenshots go (ignored by git); printed by the tests.
ARTIFACTS = Path(__file__).resolve().parents[2] / "artifacts"


def browser_missing() -> str | None:
    """Why the browser tests cannot run here, or None when they can."""
    if not (shutil.which(CHROMIUM) or os.access(CHROMIUM, os.X_OK)):
        return f"no chromium at {CHROMIUM}: apt-get install -y chromium (or set WD_TEACH_CHROMIUM)"
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        return 'playwright is not installed: pip install -e ".[dev]"'
    return None


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def status(base_url: str, token: str) -> dict | None:
    """JupyterLab's /api/status with the token, or None while it does not answer."""
    request = urllib.request.Request(f"{base_url}/api/status",
                                     headers={"Authorization": f"token {token}"})
    try:
        with urllib.request.urlopen(request, timeout=5) as answer:
            return json.load(answer)
    except (OSError, urllib.error.URLError, ValueError):
        return None


def wait_until_up(base_url: str, token: str, server: subprocess.Popen | None = None,
                  timeout: float = 180) -> dict:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if server is not None and server.poll() is not None:
            raise RuntimeError(f"JupyterLab exited with {server.returncode} before answering: "
                               f"see its log, {getattr(server, 'log', '?')}")
        answer = status(base_url, token)
        if answer is not None:
            return answer
        time.sleep(1)
    raise TimeoutError(f"JupyterLab at {base_url} did not answer /api/status in {timeout} s")


def start_lab(root: Path, port: int, token: str, log: Path) -> subprocess.Popen:
    """JupyterLab from this environment on 127.0.0.1, serving `root`, config kept in `root`."""
    env = {**os.environ, "JUPYTER_TOKEN": token,
           "JUPYTER_CONFIG_DIR": str(root / ".jupyter-config"),
           "JUPYTERLAB_WORKSPACES_DIR": str(root / ".jupyter-workspaces")}
    command = [sys.executable, "-m", "jupyterlab", "--no-browser", "--ip=127.0.0.1",
               f"--port={port}", "--ServerApp.port_retries=0", f"--ServerApp.root_dir={root}"]
    if os.geteuid() == 0:  # CI runs as root
        command.append("--allow-root")
    with open(log, "wb") as out:
        server = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT, env=env,
                                  start_new_session=True)
    server.log = log
    return server


def stop(server: subprocess.Popen) -> None:
    """End a server started with start_new_session, and everything it started."""
    if server.poll() is None:
        os.killpg(server.pid, signal.SIGTERM)
        try:
            server.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(server.pid, signal.SIGKILL)
            server.wait()


def notebook_from_server(base_url: str, token: str, path: str) -> dict:
    request = urllib.request.Request(f"{base_url}/api/contents/{path}?content=1",
                                     headers={"Authorization": f"token {token}"})
    with urllib.request.urlopen(request, timeout=30) as answer:
        return json.load(answer)["content"]


def _menu(page, menu: str, item: str) -> None:
    page.locator(".lm-MenuBar-itemLabel", has_text=re.compile(rf"^{menu}$")).click()
    page.locator(".lm-Menu-itemLabel", has_text=re.compile(rf"^{item}$")).click()


def _kernel_state(base_url: str, token: str, path: str) -> str | None:
    request = urllib.request.Request(f"{base_url}/api/sessions",
                                     headers={"Authorization": f"token {token}"})
    with urllib.request.urlopen(request, timeout=30) as answer:
        sessions = json.load(answer)
    return next((s["kernel"]["execution_state"] for s in sessions
                 if s.get("path", "").endswith(path) and s.get("kernel")), None)


def _wait_for_kernel(page, base_url: str, token: str, path: str, timeout: float = 180) -> None:
    """Wait until the notebook's kernel is started and idle. JupyterLab sometimes asks which
    kernel to start (when it opens the notebook before it knows the kernels): take its choice."""
    deadline = time.monotonic() + timeout
    while _kernel_state(base_url, token, path) != "idle":
        choose = page.locator(".jp-Dialog .jp-mod-accept")
        if choose.count() and choose.first.is_visible():
            choose.first.click()
        if time.monotonic() > deadline:
            raise TimeoutError(f"no idle kernel for {path} after {timeout} s")
        time.sleep(1)


def _dismiss_news(page) -> None:
    """Answer JupyterLab's "notified about official Jupyter news?" toast, so it hides nothing."""
    no = page.locator(".jp-Notification-Toast-Close, .Toastify button", has_text=re.compile("^No$"))
    try:
        no.first.click(timeout=5_000)
    except Exception:  # no toast this time
        pass


def _look_at(page, element, screenshot: Path) -> None:
    """Scroll `element` into view, let JupyterLab draw the cells around it, and screenshot."""
    from playwright.sync_api import expect

    element.scroll_into_view_if_needed()
    expect(element).to_be_in_viewport()
    page.wait_for_timeout(1500)  # JupyterLab draws cells that scroll into view a moment later
    page.screenshot(path=str(screenshot))


def run_notebook(base_url: str, token: str, path: str, screenshot: Path,
                 timeout: float = 900, login=None) -> dict:
    """Open `path` (relative to the server's start folder) in JupyterLab, run all cells, wait
    until every code cell has run and the kernel is idle, save, and screenshot the notebook
    (its top in `screenshot`, its last picture beside it in *.picture.png).

    `login`, for a server behind a JupyterHub, is called with the page first: it logs in as a
    learner does and returns a token for the server's REST API (the page then opens the
    notebook with the hub's cookie, not with `token`).

    Returns what the check found: the saved notebook's error outputs, the code cells that did
    not run, and the tracebacks shown on the page (all empty when the notebook ran cleanly).
    """
    from playwright.sync_api import sync_playwright

    screenshot.parent.mkdir(parents=True, exist_ok=True)
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS,
                                             headless=True)
        try:
            page = browser.new_page(viewport={"width": 1440, "height": 1000})
            page.set_default_timeout(120_000)
            if login is None:
                page.goto(f"{base_url}/lab/tree/{path}?token={token}")
            else:
                token = login(page)
                page.goto(f"{base_url}/lab/tree/{path}")
            page.locator(".jp-NotebookPanel .jp-Cell").first.wait_for()
            _wait_for_kernel(page, base_url, token, path)
            _dismiss_news(page)
            indicator = page.locator(".jp-NotebookPanel .jp-Notebook-ExecutionIndicator")
            _menu(page, "Run", "Run All Cells")
            deadline = time.monotonic() + timeout
            while True:
                time.sleep(2)
                if indicator.get_attribute("data-status") != "idle":
                    continue
                _menu(page, "File", "Save Notebook")
                page.wait_for_selector(".jp-mod-dirty", state="detached")
                saved = notebook_from_server(base_url, token, path)
                code = [c for c in saved["cells"] if c["cell_type"] == "code"]
                not_run = [i for i, c in enumerate(code) if c.get("execution_count") is None]
                errors = [o for c in code for o in c.get("outputs", [])
                          if o.get("output_type") == "error"]
                if not not_run or errors or time.monotonic() > deadline:
                    break
            _look_at(page, page.locator(".jp-NotebookPanel .jp-Cell").first, screenshot)
            # A second look further down: the last picture the notebook drew, if any.
            pictures = page.locator(".jp-OutputArea-output img")
            if pictures.count():
                _look_at(page, pictures.last, screenshot.with_suffix(".picture.png"))
            shown = [text for text in page.locator(".jp-OutputArea-output").all_inner_texts()
                     if "Traceback (most recent call last)" in text]
        except Exception:
            page.screenshot(path=str(screenshot.with_suffix(".failed.png")))
            print(f"screenshot of the failure: {screenshot.with_suffix('.failed.png')}")
            raise
        finally:
            browser.close()
    return {"errors": errors, "not_run": not_run, "shown_tracebacks": shown,
            "code_cells": len(code)}
