"""`thrust web build`: the static site plays every reference bundle from a plain static file server
(`python -m http.server`), under a sub-path, with no Thrust process behind it."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from thrust_app.cli import main
from thrust_app.interop.playback import onnx_episode
from thrust_app.web.browser import player_page
from thrust_app.web.server import REFERENCE_BUNDLES, REFERENCE_DIR
from thrust_app.web.site import MARKER, MUJOCO_NPM_FILES, NPM_FILES

from .test_player import needs_browser  # one definition: Chromium and web/node_modules present

SUB_PATH = "players/thrust/"


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("host")
    out = root / SUB_PATH
    assert main(["web", "build", str(out), *(str(REFERENCE_DIR / name) for name in REFERENCE_BUNDLES)]) == 0
    return out


@pytest.fixture(scope="module")
def static_server(site):
    """Python's own static file server over the folder *above* the site, so the site lives under a sub-path."""
    root = site.parents[len(Path(SUB_PATH).parts) - 1]
    server = subprocess.Popen(
        [sys.executable, "-u", "-m", "http.server", "0", "--bind", "127.0.0.1", "--directory", str(root)],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    try:
        line = server.stdout.readline()  # "Serving HTTP on 127.0.0.1 port N (http://127.0.0.1:N/) ..."
        port = int(line.split(" port ")[1].split()[0])
        yield f"http://127.0.0.1:{port}/"
    finally:
        os.kill(server.pid, signal.SIGTERM)
        server.wait(10)


def site_files(site: Path) -> set[str]:
    return {path.relative_to(site).as_posix() for path in site.rglob("*") if path.is_file()}


def test_site_holds_only_what_the_page_needs(site):
    """MuJoCo's wasm build and gymnasium's XML come along only for the reference bundle of a MuJoCo robot."""
    files = site_files(site)
    npm = {f"node_modules/{name}" for name in NPM_FILES + MUJOCO_NPM_FILES}
    assert npm == {name for name in files if name.startswith("node_modules/")}
    assert {name for name in files if name.startswith("py/mujoco/")} == {"py/mujoco/half_cheetah.xml"}
    for name in REFERENCE_BUNDLES:
        assert {f"export/{name}/policy.onnx", f"export/{name}/manifest.json"} <= files
    assert {"index.html", "export/index.json", "py/index.json", MARKER, ".nojekyll"} <= files


def test_build_refuses_a_folder_it_did_not_make_and_rebuilds_its_own(site, tmp_path, capsys):
    (tmp_path / "precious.txt").write_text("keep me")
    assert main(["web", "build", str(tmp_path), str(REFERENCE_DIR / "cartpole-ppo")]) == 2
    assert "not a site" in capsys.readouterr().err
    assert (tmp_path / "precious.txt").exists()
    rebuilt = tmp_path / "site"
    assert main(["web", "build", str(rebuilt), str(REFERENCE_DIR / "cartpole-ppo")]) == 0
    robots = [name for name in site_files(rebuilt) if name.startswith(("node_modules/mujoco-js/", "py/mujoco/"))]
    assert robots == []  # no robot on it: no MuJoCo either
    assert main(["web", "build", str(rebuilt), str(REFERENCE_DIR / "bandit-ppo")]) == 0  # its own site: replaced
    assert sorted(p.name for p in (rebuilt / "export").iterdir() if p.is_dir()) == ["bandit-ppo"]
    assert main(["web", "build", str(tmp_path / "other"), "no-such-bundle"]) == 2
    assert "no bundle" in capsys.readouterr().err


@needs_browser
def test_static_site_under_a_sub_path_plays_every_bundle(static_server):
    url = static_server + SUB_PATH
    with player_page(url, f"?bundle={REFERENCE_BUNDLES[0]}&ep=wasm") as page:
        for name in REFERENCE_BUNDLES:
            got = page.evaluate("(a) => window.thrustPlayer.runEpisode(a)", {"bundle": name, "seed": 2, "ep": "wasm"})
            want = onnx_episode(REFERENCE_DIR / name, 2)
            assert got["steps"] == want.steps
            chaotic = name == "halfcheetah-sac"  # a running robot's episodes part within steps (test_player.py)
            assert got["episodeReturn"] == pytest.approx(want.episode_return, rel=0.1 if chaotic else 1e-4)
        got = page.evaluate("(a) => window.thrustPlayer.runEpisode(a)", {"bundle": "cartpole-ppo", "seed": 2, "ep": "webgpu"})
        assert got["ep"] == "webgpu" and got["steps"] == onnx_episode(REFERENCE_DIR / "cartpole-ppo", 2).steps
        assert page.failed == []  # every file the page asked for was in the folder
        assert all(request.startswith(url) for request in page.requests), page.requests


@needs_browser
def test_embed_mode_plays_one_bundle_with_the_controls_hidden(static_server):
    with player_page(static_server + SUB_PATH, "?bundle=cartpole-ppo&embed=1") as page:
        page.wait_for_function("Number(document.getElementById('stat-steps').textContent) > 5", timeout=30_000)
        assert not page.is_visible("header") and not page.is_visible("#bundle") and page.is_visible("#play")
        assert page.is_visible("#canvas")


@needs_browser
def test_static_site_trains_in_the_tab(static_server):
    """The Train mode needs no Thrust process: presets, templates and onnx.proto are files in the site."""
    url = static_server + SUB_PATH
    with player_page(url, "?mode=train") as page:
        result = page.evaluate("window.thrustPlayer.trainInBrowser({env: 'bandit', seed: 1, backend: 'wasm'})")
        assert result["solved"] and result["backend"] == "wasm"
        episode = page.evaluate(
            "n => window.thrustPlayer.runEpisode({bundle: n, seed: 0, ep: 'wasm'})",
            page.evaluate("window.thrustPlayer.activeBundle"),
        )
        assert episode["episodeReturn"] == 1.0
        assert page.failed == [] and all(request.startswith(url) for request in page.requests), page.failed


@needs_browser
def test_the_player_opens_with_a_bundle_ready_to_play(static_server):
    """Issue #40: the player opened with no bundle selected and Play disabled."""
    with player_page(static_server + SUB_PATH) as page:
        page.evaluate("window.thrustPlayer.settled()")
        chosen = page.eval_on_selector("#bundle", "select => select.value")
        assert chosen == sorted(REFERENCE_BUNDLES)[0] and page.evaluate("window.thrustPlayer.activeBundle") == chosen
        assert page.is_enabled("#play")
        page.click("#play")
        page.wait_for_function("document.getElementById('stat-latency').textContent.includes('ms')", timeout=30_000)
        assert page.is_hidden("#error"), page.inner_text("#error")


@needs_browser
def test_a_first_visit_fetches_only_what_playing_needs(static_server):
    """A deep link draws its bundle's first frame (the time benches/onnx_policies.py reports) without fetching
    the Train mode's TensorFlow.js and protobufjs: a page that plays loads Pyodide, onnxruntime-web and the bundle."""
    with player_page(static_server + SUB_PATH, "?bundle=cartpole-ppo&ep=wasm") as page:
        page.wait_for_function("window.thrustPlayer.timings.firstFrameMs !== null", timeout=60_000)
        timings = page.evaluate("window.thrustPlayer.timings")
        assert timings["firstFrameMs"] > timings["pyodideStartupMs"] > 0
        assert page.evaluate("window.thrustPlayer.activeBundle") == "cartpole-ppo"
        fetched = {request.split("node_modules/")[1].split("/")[0] for request in page.requests if "node_modules/" in request}
        assert fetched == {"pyodide", "onnxruntime-web"}, fetched
