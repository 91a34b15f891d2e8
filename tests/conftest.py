"""Shared test set-up: one torch thread (small nets; see DEVELOPERS.md) and quiet gymnasium checks."""

import os

os.environ.setdefault("OMP_NUM_THREADS", "1")
