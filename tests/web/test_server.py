"""The player's server answers what it cannot serve with a status and no traceback: a malformed path (a NUL
byte, a path that is not absolute) is 400, a missing file 404; it serves the bundles of the one export
folder every command writes to, beside the reference bundles."""

from __future__ import annotations

import http.client
import json
import urllib.request

import pytest

from thrust_app.web.server import PlayerServer


@pytest.fixture
def server(tmp_path):
    with PlayerServer(port=0, export_dir=tmp_path) as running:
        yield running


def status_of(server: PlayerServer, path: str) -> int:
    host, port = server.httpd.server_address[:2]
    connection = http.client.HTTPConnection(host, port, timeout=10)
    connection.putrequest("GET", path, skip_accept_encoding=True)
    connection.endheaders()
    status = connection.getresponse().status
    connection.close()
    return status


@pytest.mark.parametrize("path", ["/src/%00player.js", "/export/%00/manifest.json", "/%00", "index.html"])
def test_a_malformed_path_is_400_without_a_traceback(server, path, capfd):
    assert status_of(server, path) == 400
    assert "Traceback" not in capfd.readouterr().err


def test_a_missing_file_is_404(server):
    assert status_of(server, "/src/nothing.js") == 404
    assert status_of(server, "/export/nothing/manifest.json") == 404


@pytest.mark.parametrize(
    "path", ["/export/./../pyproject.toml", "/export/../pyproject.toml", "/export/bandit-ppo/../../pyproject.toml", "/export/"]
)
def test_nothing_outside_a_bundle_is_served_under_export(server, path):
    assert status_of(server, path) == 404


def test_one_export_folder_for_every_command(tmp_path, monkeypatch):
    """`thrust export` writes to the working directory's export/; the player and `web build NAME` find the
    bundle there, and still list the reference bundles, which nothing writes to."""
    from thrust_app.cli import main
    from thrust_app.interop.bundle import REFERENCE_DIR
    from thrust_app.training.trainer import train
    from thrust_app.web.server import REFERENCE_BUNDLES, bundle_index
    from thrust_app.web.site import build_site

    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("THRUST_EXPORT_DIR", raising=False)
    reference_before = sorted(p.name for p in REFERENCE_DIR.iterdir())
    train("ppo", "bandit", timesteps=256, run_dir=tmp_path / "runs" / "mine", eval_episodes=1, progress=False, log=print)
    assert main(["export", str(tmp_path / "runs" / "mine")]) == 0
    assert (tmp_path / "export" / "mine" / "manifest.json").is_file()
    with PlayerServer(port=0) as running:
        names = {entry["name"] for entry in json.load(urllib.request.urlopen(running.url + "export/index.json", timeout=10))}
        assert {"mine", *REFERENCE_BUNDLES} <= names
        assert urllib.request.urlopen(running.url + "export/mine/manifest.json", timeout=10).status == 200
    assert build_site(tmp_path / "site", ["mine", "bandit-ppo"], log=lambda _: None)["bundles"] == ["mine", "bandit-ppo"]
    assert sorted(p.name for p in REFERENCE_DIR.iterdir()) == reference_before
    assert "mine" in {entry["name"] for entry in bundle_index(tmp_path / "export")}
