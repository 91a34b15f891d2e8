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
            page.on("request", lambda request: page.requests.append(request.url))
            page.goto(server_url + query)
            page.wait_for_function("window.thrustPlayer !== undefined")
            page.evaluate("window.thrustPlayer.ready")
            yield page
        finally:
            browser.close()
