"""The run folder's write lock: held by one process, free the moment that process ends."""

from __future__ import annotations

import multiprocessing

from thrust_app.runs.lock import RunLock, is_locked


def test_a_forked_child_does_not_keep_the_folder_locked(tmp_path):
    """A sweep's workers are forked from its driver: once the driver is gone the folder is free, even while
    a worker still runs (killed together, the workers may end a moment later)."""
    ready, release = multiprocessing.get_context("fork").Event(), multiprocessing.get_context("fork").Event()
    lock = RunLock(tmp_path).__enter__()
    child = multiprocessing.get_context("fork").Process(target=lambda: (ready.set(), release.wait(30)))
    child.start()
    assert ready.wait(30)
    lock.__exit__(None, None, None)  # the parent lets go; the child is still alive
    assert not is_locked(tmp_path)
    release.set()
    child.join(30)
