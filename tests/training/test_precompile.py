"""Precompiling the numba updates: after `python -m thrust_app.training.precompile` on an empty cache, a new
process's compiled DQN, SAC and PPO runs load every kernel from numba's cache and compile none."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from thrust_app.training import precompile

#: A second process: the same short runs, then each kernel's cache hits and misses (numba's dispatcher stats).
CACHE_STATS = """
import json
import numba
from thrust_app.speed import numba_kernels
from thrust_app.training import precompile
precompile.precompile(log=lambda _: None)
kernels = {name: f for name, f in vars(numba_kernels).items() if isinstance(f, numba.core.registry.CPUDispatcher)}
stats = {name: [sum(f.stats.cache_hits.values()), sum(f.stats.cache_misses.values())] for name, f in kernels.items()}
print(json.dumps(stats))
"""


def test_a_run_after_precompile_compiles_no_kernel(tmp_path):
    env = {**os.environ, "NUMBA_CACHE_DIR": str(tmp_path / "numba-cache"), "OMP_NUM_THREADS": "1"}
    first = subprocess.run([sys.executable, "-m", "thrust_app.training.precompile"], env=env, capture_output=True, text=True)
    assert first.returncode == 0, first.stderr
    assert first.stdout.count("the compiled update is ready") == len(precompile.RUNS) == 4, first.stdout
    assert "falls back" not in first.stdout
    second = subprocess.run([sys.executable, "-c", CACHE_STATS], env=env, capture_output=True, text=True)
    assert second.returncode == 0, second.stderr
    stats = json.loads(second.stdout.strip().splitlines()[-1])
    used = {name: hits for name, (hits, misses) in stats.items() if hits or misses}
    assert {"dqn_gradient", "critic_gradient", "actor_gradient", "actor_critic_gradient"} <= set(used), stats
    assert all(misses == 0 for hits, misses in stats.values()), f"kernels compiled again: {stats}"
