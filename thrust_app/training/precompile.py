"""Fill numba's on-disk cache with the compiled DQN and SAC updates (`update="numba"`) ahead of a first run.

numba compiles each kernel of numba_kernels.py on its first call on a machine (DQN about 6 s, SAC about
14 s on a 2-core Xeon VM, benches/sbx_peer.py's `cold_compile_s`) and loads it from its cache afterwards
(0.1-0.3 s). `make install` (and so `make run` and `make test`) runs this once, so the first compiled
run a user starts loads its kernels instead:

    python -m thrust_app.training.precompile

It trains each algorithm for a few updates with `update="numba"` in a temporary folder: the kernels are
compiled for exactly the argument types a training run passes them.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from tempfile import TemporaryDirectory

#: algo -> (env, timesteps, settings): the preset's network and batch with an early start, a handful of updates.
RUNS = {
    "dqn": ("thrust/CartPole-v0", 400, {"learning_starts": 100}),
    "sac": ("thrust/Pendulum-v0", 120, {"learning_starts": 100}),
}


def precompile(log: Callable[[str], None] = print) -> dict[str, float]:
    """Compile (or load) every kernel of the numba updates; seconds each algorithm's short run took."""
    from ..speed.numba_kernels import CACHED
    from .trainer import train

    if not CACHED:
        log("precompile: numba has no writable cache folder here (NUMBA_CACHE_DIR names one); nothing kept")
        return {}
    seconds, lines = {}, []
    with TemporaryDirectory() as tmp:
        for algo, (env, timesteps, settings) in RUNS.items():
            start = time.perf_counter()
            lines.clear()
            train(
                algo,
                env,
                timesteps=timesteps,
                device="cpu",
                run_dir=Path(tmp) / algo,
                overrides={"update": "numba", **settings},
                eval_every=timesteps,
                eval_episodes=1,
                progress=False,
                log=lines.append,
            )
            seconds[algo] = time.perf_counter() - start
            # the run's notes say when it could not take the numba form ("update=numba falls back to ...: why")
            fallbacks = [line.removeprefix("thrust: ") for line in lines if "falls back" in line]
            if fallbacks:
                log(f"precompile: {algo}: {fallbacks[0]}; nothing compiled")
            else:
                log(f"precompile: {algo}'s compiled update ready in numba's cache ({seconds[algo]:.1f} s)")
    return seconds


if __name__ == "__main__":
    precompile()
