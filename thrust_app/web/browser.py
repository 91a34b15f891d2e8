"""Headless Debian Chromium driving the player page, for tests and benchmarks (never a downloaded browser)."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path

CHROMIUM = Path("/usr/bin/chromium")
#: Flags for this machine: no background traffic (the network is closed), WebGPU on (SwiftShader adapter).
CHROMIUM_ARGS = [
    "--headless=new",
    "--no-sandbox",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--disable-quic",
    "--enable-unsafe-webgpu",
]


class BrowserUnavailable(RuntimeError):
    """No Chromium at /usr/bin/chromium, or no Playwright."""


@contextlib.contextmanager
def player_page(server_url: str, query: str = "") -> Iterator[object]:
    """A Playwright page on the player, with Python and the first bundle ready."""
    if not CHROMIUM.exists():
        raise BrowserUnavailable("no Chromium at /usr/bin/chromium: `apt-get install chromium`")
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        raise BrowserUnavailable("Playwright for Python is not installed: `pip install playwright`") from None
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        try:
            page = browser.new_page()
            page.requests = []
            page.failed = []  # (status, url) of every response that was an error
            page.on("request", lambda request: page.requests.append(request.url))
            page.on(
                "response", lambda response: response.status >= 400 and page.failed.append((response.status, response.url))
            )
            page.goto(server_url + query)
            page.wait_for_function("window.thrustPlayer !== undefined")
            page.evaluate("window.thrustPlayer.ready")
            yield page
        finally:
            browser.close()


@contextlib.contextmanager
def dashboard_page(env: dict[str, str] | None = None, timeout_s: float = 90) -> Iterator[object]:
    """A Playwright page on a `thrust app` started for it on a free loopback port, once the New run form
    shows; the dashboard is stopped afterwards by its process group."""
    import os
    import signal
    import socket
    import subprocess
    import sys
    import time

    from playwright.sync_api import sync_playwright

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    app = subprocess.Popen(
        [sys.executable, "-m", "thrust_app", "app", "--port", str(port)],
        env=env or dict(os.environ),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
            page = browser.new_page(viewport={"width": 1400, "height": 1100})
            deadline = time.time() + timeout_s
            while True:
                try:
                    page.goto(f"http://127.0.0.1:{port}/", timeout=5000)
                    page.get_by_text("Start training").wait_for(timeout=30_000)
                    break
                except Exception:  # not serving yet
                    if time.time() > deadline:
                        raise
                    time.sleep(1)
            try:
                yield page
            finally:
                browser.close()
    finally:
        os.killpg(app.pid, signal.SIGTERM)
        app.wait(30)
