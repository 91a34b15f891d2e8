"""Staging folders are Thrust's own: a user's folders beside an export or a site are never touched, what a
killed build left is removed by the next build of the same target (and only once its process is gone),
and a file where a site should go is one line."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from thrust_app.interop.bundle import BundleError
from thrust_app.interop.exporter import export_run
from thrust_app.runs.staging import MARK, remove_abandoned
from thrust_app.training.trainer import train
from thrust_app.web.site import build_site

QUIET = {"progress": False, "log": lambda _: None}


@pytest.fixture(scope="module")
def run(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("runs") / "run"
    train("ppo", "bandit", timesteps=256, run_dir=folder, device="cpu", eval_episodes=1, **QUIET)
    return folder


def ended_pid() -> str:
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    return str(child.pid)


def user_folders(parent: Path, name: str) -> list[Path]:
    """Folders a user might keep beside a target, with names Thrust once used for its own."""
    folders = [parent / f".{name}.old", parent / f".{name}.building", parent / f".{name}.notes"]
    for folder in folders:
        folder.mkdir(parents=True)
        (folder / "notes.txt").write_text("mine")
    return folders


def test_exports_never_touch_a_users_folders_beside_the_bundle(run, tmp_path):
    out = tmp_path / "export" / "bundle"
    mine = user_folders(out.parent, "bundle")
    export_run(run, out=out)
    export_run(run, out=out, force=True)
    assert all((folder / "notes.txt").read_text() == "mine" for folder in mine)
    assert sorted(p.name for p in out.parent.iterdir()) == sorted(["bundle", *(f.name for f in mine)])


def test_what_a_killed_export_left_is_removed_by_the_next_export_of_that_bundle(run, tmp_path):
    out = tmp_path / "export" / "bundle"
    abandoned, building = out.parent / ".bundle.k1ll3d.staging", out.parent / ".bundle.l1v3.staging"
    for folder, pid in ((abandoned, ended_pid()), (building, str(os.getpid()))):
        folder.mkdir(parents=True)
        (folder / MARK).write_text(pid)
        (folder / "policy.onnx").write_bytes(b"half a model")
    export_run(run, out=out)
    assert not abandoned.exists()  # its process is gone
    assert building.exists()  # a build still running (here: this process) keeps its folder


def test_a_site_is_built_beside_a_users_folders_without_touching_them(tmp_path):
    out = tmp_path / "mysite"
    mine = user_folders(tmp_path, "mysite")
    build_site(out, ["bandit-ppo"], log=lambda _: None)
    build_site(out, ["bandit-ppo"], log=lambda _: None)  # a rebuild replaces the site it made
    assert all((folder / "notes.txt").read_text() == "mine" for folder in mine)
    assert not list(tmp_path.glob("*.staging*")) and not (out / MARK).exists()


def test_a_file_where_the_site_should_go_is_one_line(tmp_path):
    out = tmp_path / "site"
    out.write_text("a file of mine")
    with pytest.raises(BundleError, match=r"site is a file; give `thrust web build` a folder"):
        build_site(out, ["bandit-ppo"], log=lambda _: None)
    assert out.read_text() == "a file of mine"


def test_an_unreadable_mark_keeps_the_folder(tmp_path):
    folder = tmp_path / ".target.x.staging"
    folder.mkdir()
    (folder / MARK).write_text("not a pid")
    remove_abandoned(tmp_path / "target")
    assert folder.exists()
