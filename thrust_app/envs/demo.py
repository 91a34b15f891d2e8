"""A first look at the four environments: one seeded episode of each under a random policy."""

from __future__ import annotations

import random

from .core import CORE_ENVS, Discrete, make_core


def random_action(space, rng: random.Random):
    if isinstance(space, Discrete):
        return rng.randrange(space.n)
    return [rng.uniform(lo, hi) for lo, hi in zip(space.low, space.high, strict=True)]


def run_demo(seed: int = 0, print_fn=print) -> dict[str, dict]:
    """Play one episode of each env with random actions; print and return what each showed."""
    rng = random.Random(seed)
    seen = {}
    for env_id in CORE_ENVS:
        env = make_core(env_id)
        obs = env.reset(seed=seed)
        first_obs = obs
        while True:
            result = env.step(random_action(env.action_space, rng))
            if result.terminated or result.truncated:
                break
        ending = "terminated" if result.terminated else "truncated"
        shape = "x".join(map(str, env.observation_space.shape))
        seen[env_id] = {"steps": env.steps, "return": env.episode_return, "ending": ending}
        preview = ", ".join(f"{v:+.3f}" for v in first_obs[:4])
        print_fn(
            f"{env_id:22s} obs {shape:8s} first obs [{preview}{', ...' if len(first_obs) > 4 else ''}]  "
            f"random policy: {env.steps:3d} steps, return {env.episode_return:+8.2f} ({ending})"
        )
    return seen
