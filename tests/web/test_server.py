"""The player's server answers what it cannot serve with a status and no traceback: a malformed path (a NUL
byte, a path that is not absolute) is 400, a missing file 404."""

from __future__ import annotations

import http.client

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
