"""Folders built beside their target and swapped in whole (bundles, sites), so a reader never sees half of one.

A staging folder is Thrust's own: a unique name beside the target (`.NAME.XXXX.staging`), marked inside
with the PID of the process building it. A build that is killed leaves it behind; the next build of the
same target removes every such folder whose process is gone, and nothing else: a user's own `.NAME.old`
or `.NAME.building` beside the target is never touched.
"""

from __future__ import annotations

import glob
import os
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

#: The file inside a staging folder (or a replaced folder on its way out) that says whose it is: a PID.
MARK = ".thrust-staging"


@contextmanager
def staged_folder(target: Path) -> Iterator[Path]:
    """A new folder beside `target` to build its next version in; removed if anything fails inside. What
    killed builds of the same target left is removed first."""
    target.parent.mkdir(parents=True, exist_ok=True)
    remove_abandoned(target)
    staging = Path(tempfile.mkdtemp(prefix=f".{target.name}.", suffix=".staging", dir=target.parent))
    staging.chmod(0o755)  # mkdtemp makes it private; bundles and sites are meant to be served and shared
    (staging / MARK).write_text(str(os.getpid()))
    try:
        yield staging
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise


def install(staging: Path, target: Path) -> None:
    """Put the built `staging` folder in `target`'s place; a folder already there is moved aside under the
    staging folder's own name (marked, so that a killed removal is finished by the next build) and removed."""
    (staging / MARK).unlink()
    if not target.exists():
        staging.rename(target)
        return
    aside = staging.with_name(f"{staging.name}.replaced")
    target.rename(aside)
    (aside / MARK).write_text(str(os.getpid()))
    staging.rename(target)
    shutil.rmtree(aside, ignore_errors=True)


def remove_abandoned(target: Path) -> None:
    """Remove the staging (and replaced) folders of `target` whose building process has ended."""
    for folder in target.parent.glob(f".{glob.escape(target.name)}.*.staging*"):
        mark = folder / MARK
        if folder.is_dir() and mark.is_file() and not process_alive(mark.read_text()):
            shutil.rmtree(folder, ignore_errors=True)


def process_alive(pid_text: str) -> bool:
    """Whether the process a mark names still runs (an unreadable mark counts as running: keep the folder)."""
    if not pid_text.strip().isdigit():
        return True
    try:
        os.kill(int(pid_text), 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    status = Path(f"/proc/{int(pid_text)}/status")  # a zombie has ended
    return not (status.exists() and "\nState:\tZ" in status.read_text())
