"""Shared test set-up: one torch thread, as Thrust trains small nets (a second thread only adds
synchronisation on two cores)."""

import os

os.environ.setdefault("OMP_NUM_THREADS", "1")
