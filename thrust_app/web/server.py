"""`thrust web`: serve the browser player (web/), the bundles (export/) and the core wheel on 127.0.0.1.

Routes: `/` and the player's files from web/, `/node_modules/...` (pyodide, onnxruntime-web),
`/export/index.json` (the bundles found, built per request), `/export/<name>/{policy.onnx,manifest.json}`,
`/py/<wheel>` (Thrust's env cores for Pyodide) and `/py/training.json`, `/py/onnx.proto`,
`/py/templates/<env>.{onnx,json}` (the Train mode's presets and export templates, training_assets.py),
`/py/mujoco/<file>.xml` (gymnasium's own XML of each MuJoCo env the player runs, from the installed gymnasium).
Every response carries COOP/COEP headers (cross-origin isolation, which onnxruntime-web's threaded wasm
needs) and no request is ever made beyond this server.
"""

from __future__ import annotations

import json
import mimetypes
import os
import shutil
import subprocess
import sys
import threading
from functools import partial
from http import HTTPStatus
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlparse

from ..envs.core import LOCOMOTION_TASKS
from ..envs.mujoco_physics import gymnasium_xml
from ..interop.bundle import REFERENCE_DIR, BundleError, bundle_dirs, find_bundle, load_bundle
from .core_wheel import build_core_wheel, wheel_name
from .training_assets import asset

REPO_ROOT = Path(__file__).resolve().parents[2]
WEB_DIR = REPO_ROOT / "web"
HOST = "127.0.0.1"

MIME_TYPES = {
    ".wasm": "application/wasm",
    ".mjs": "text/javascript",
    ".js": "text/javascript",
    ".json": "application/json",
    ".onnx": "application/octet-stream",
    ".whl": "application/zip",
    ".zip": "application/zip",
    ".css": "text/css",
    ".html": "text/html; charset=utf-8",
    ".map": "application/json",
    ".py": "text/x-python",
    ".proto": "text/plain; charset=utf-8",
    ".xml": "text/xml; charset=utf-8",
}

#: The MuJoCo XML files the player loads (py/mujoco/NAME), one per locomotion env it runs.
MUJOCO_XML = sorted({task.xml_file for task in LOCOMOTION_TASKS.values()})


#: The bundles committed in the source's export/ (REFERENCE_DIR; `make reference-bundles` rebuilds them).
REFERENCE_BUNDLES = (
    "bandit-ppo",
    "cartpole-ppo",
    "pendulum-sac",
    "snake-dqn",
    "cartpole-novel-recurrent_ppo",
    "cards-ppo",
    "minatar-breakout-dqn",
    "halfcheetah-sac",
)


class WebSetupError(RuntimeError):
    """The player cannot be served (npm missing, install failed)."""


def ensure_node_modules(web_dir: Path = WEB_DIR, log=print) -> None:
    """Install web/'s npm packages from package-lock.json if they are missing."""
    packages = ("pyodide", "onnxruntime-web", "@tensorflow/tfjs-backend-wasm", "protobufjs", "mujoco-js")
    if all((web_dir / "node_modules" / package).is_dir() for package in packages):
        return
    npm = shutil.which("npm")
    if npm is None:
        raise WebSetupError(
            "the browser player needs npm (Node.js) to install pyodide and onnxruntime-web; "
            "install Node.js >= 18, then run `thrust web` again"
        )
    log("thrust: installing the player's npm packages (npm ci)...")
    done = subprocess.run([npm, "ci", "--no-audit", "--no-fund"], cwd=web_dir, capture_output=True, text=True)
    if done.returncode != 0:
        raise WebSetupError(f"`npm ci` in {web_dir} failed:\n{done.stderr[-2000:]}")


def bundle_index(*dirs: Path) -> list[dict]:
    """Every bundle in `dirs`, valid ones with their manifest summary, broken ones with the reason; a name
    found in an earlier folder hides the same name in a later one."""
    entries, seen = [], set()
    for path in (
        p for folder in dirs if folder.is_dir() for p in sorted(folder.iterdir()) if p.is_dir() and not p.name.startswith(".")
    ):
        if path.name in seen:
            continue
        seen.add(path.name)
        try:
            m = load_bundle(path).manifest
            entries.append(
                {
                    "name": path.name,
                    "env_id": m["env_id"],
                    "algo": m["algo"],
                    "eval_mean": m.get("training", {}).get("eval_mean"),
                    "ok": True,
                }
            )
        except BundleError as err:
            entries.append({"name": path.name, "ok": False, "error": str(err)})
    return entries


class PlayerHandler(SimpleHTTPRequestHandler):
    """Static files with the player's headers and MIME types, plus the generated routes."""

    export_dirs: tuple[Path, ...] = (REFERENCE_DIR,)
    wheel: bytes = b""

    def __init__(self, *args, directory: str, **kwargs) -> None:
        super().__init__(*args, directory=directory, **kwargs)

    def end_headers(self) -> None:
        self.send_header("Cross-Origin-Opener-Policy", "same-origin")
        self.send_header("Cross-Origin-Embedder-Policy", "require-corp")
        self.send_header("Cross-Origin-Resource-Policy", "same-origin")
        self.send_header("Cache-Control", "no-cache")
        super().end_headers()

    def list_directory(self, path: str | os.PathLike[str]) -> None:
        """No folder listings: the player asks for files by name."""
        self.send_error(HTTPStatus.NOT_FOUND, "no listing here")

    def guess_type(self, path) -> str:
        return (
            MIME_TYPES.get(Path(str(path)).suffix.lower()) or mimetypes.guess_type(str(path))[0] or "application/octet-stream"
        )

    def log_message(self, format: str, *args) -> None:
        if getattr(self.server, "verbose", False):
            super().log_message(format, *args)

    def _send(self, body: bytes, content_type: str) -> None:
        self.send_response(HTTPStatus.OK)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def do_HEAD(self) -> None:
        self.do_GET()

    def do_GET(self) -> None:
        path = unquote(urlparse(self.path).path)
        if "\0" in path or not path.startswith("/"):  # no file has such a name (os calls refuse a NUL)
            return self.send_error(HTTPStatus.BAD_REQUEST, "malformed path")
        if path == "/export/index.json":
            return self._send(json.dumps(bundle_index(*self.export_dirs)).encode(), "application/json")
        if path == f"/py/{wheel_name()}":
            return self._send(self.wheel, "application/zip")
        if path == "/py/index.json":
            return self._send(json.dumps({"wheel": wheel_name()}).encode(), "application/json")
        if path.startswith("/py/mujoco/") and path[len("/py/mujoco/") :] in MUJOCO_XML:
            return self._send(gymnasium_xml(path[len("/py/mujoco/") :]).read_bytes(), self.guess_type(path))
        if path.startswith("/py/") and (body := asset(path[len("/py/") :])) is not None:
            return self._send(body, self.guess_type(path))
        if path.startswith("/export/"):
            name, _, file = path[len("/export/") :].partition("/")
            if name in ("", ".", ".."):  # a bundle is a plain folder name (pathlib reads "export/." as "export")
                return self.send_error(HTTPStatus.NOT_FOUND, "no such bundle file")
            folder = find_bundle(name, list(self.export_dirs)).resolve()
            target = (folder / file).resolve()
            if folder not in target.parents or not target.is_file():  # only the bundle's own files
                return self.send_error(HTTPStatus.NOT_FOUND, "no such bundle file")
            return self._send(target.read_bytes(), self.guess_type(target))
        return super().do_GET()


class QuietHTTPServer(ThreadingHTTPServer):
    """A client that goes away mid-transfer (a closed tab, a test reading headers only) is normal, not
    an error worth a traceback; anything else is reported as usual."""

    def handle_error(self, request: Any, client_address: Any) -> None:
        if isinstance(sys.exc_info()[1], (ConnectionResetError, BrokenPipeError)):
            return
        super().handle_error(request, client_address)


class PlayerServer:
    """The player's HTTP server on 127.0.0.1; `start()` runs it in a thread, `stop()` shuts it down."""

    def __init__(
        self, port: int = 8000, web_dir: Path = WEB_DIR, export_dir: Path | None = None, verbose: bool = False
    ) -> None:
        """`export_dir`: the user's bundles (`bundle.export_dir()` unless given), served with the reference ones."""
        dirs = tuple(bundle_dirs(export_dir))
        handler = type("Handler", (PlayerHandler,), {"export_dirs": dirs, "wheel": build_core_wheel()})
        self.httpd = QuietHTTPServer((HOST, port), partial(handler, directory=str(web_dir)))
        self.httpd.verbose = verbose
        self.httpd.daemon_threads = True
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        return f"http://{HOST}:{self.httpd.server_address[1]}/"

    def start(self) -> PlayerServer:
        self._thread = threading.Thread(target=self.httpd.serve_forever, name="thrust-web", daemon=True)
        self._thread.start()
        return self

    def serve_forever(self) -> None:
        self.httpd.serve_forever()

    def stop(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)

    def __enter__(self) -> PlayerServer:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()
