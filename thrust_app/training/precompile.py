"""Fill numba's on-disk cache with the compiled DQN, SAC and A2C/PPO updates (`update="numba"`) ahead of a
first run.

numba compiles each kernel of numba_kernels.py on its first call on a machine (DQN about 6 s, SAC about
14 s on a 2-core Xeon VM, benches/sbx_peer.py's `cold_compile_s`; PPO 13-18 s, then 4-6 s more for the other kind of action)
and loads it from its cache afterwards (0.1-0.3 s). `make install` (and so `make run` and `make test`) runs
this once, so the first compiled run a user starts loads its kernels instead:

    python -m thrust_app.training.precompile

It trains each algorithm for a few updates with `update="numba"` in a temporary folder: the kernels are
compiled for exactly the argument types a training run passes them.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from tempfile import TemporaryDirectory

#: (algo, env, timesteps, settings): the preset's network and batch with an early start, a handful of updates.
#: PPO's kernel compiles once for discrete actions (integers) and once for continuous ones; A2C shares it.
RUNS = [
    ("dqn", "thrust/CartPole-v0", 400, {"learning_starts": 100}),
    ("sac", "thrust/Pendulum-v0", 120, {"learning_starts": 100}),
    ("ppo", "thrust/CartPole-v0", 64, {"n_envs": 1, "n_steps": 64, "n_epochs": 1, "batch_size": 32}),
    ("ppo", "thrust/Pendulum-v0", 64, {"n_envs": 1, "n_steps": 64, "n_epochs": 1, "batch_size": 32, "use_sde": False}),
]


def precompile(log: Callable[[str], None] = print) -> dict[str, float]:
    """Compile (or load) every kernel of the numba updates; seconds each short run took, by "algo env"."""
    from ..speed.numba_kernels import CACHED
    from .trainer import train

    if not CACHED:
        log("precompile: numba has no writable cache folder here (NUMBA_CACHE_DIR names one); nothing kept")
        return {}
    seconds, lines = {}, []
    with TemporaryDirectory() as tmp:
        for algo, env, timesteps, settings in RUNS:
            start = time.perf_counter()
            lines.clear()
            train(
                algo,
                env,
                timesteps=timesteps,
                device="cpu",
                run_dir=Path(tmp) / f"{algo}-{len(seconds)}",
                overrides={"update": "numba", **settings},
                eval_every=timesteps,
                eval_episodes=1,
                progress=False,
                log=lines.append,
            )
            name = f"{algo} {env}"
            seconds[name] = time.perf_counter() - start
            # the run's notes say when it could not take the numba form ("update=numba falls back to ...: why")
            fallbacks = [line.removeprefix("thrust: ") for line in lines if "falls back" in line]
            if fallbacks:
                log(f"precompile: {name}: {fallbacks[0]}; nothing compiled")
            else:
                log(f"precompile: {name}: the compiled update is ready in numba's cache ({seconds[name]:.1f} s)")
    return seconds


if __name__ == "__main__":
    precompile()
