"""Evaluation episodes played as the rows of one array-batched env: `evaluate`'s fast form.

`training/evaluation.py` plays each episode on a gymnasium env of its own, a Python step per episode per
policy call (the reference). Where the env is one of Thrust's array-batched cores (CartPole, Pendulum, the
bandit, their hidden-velocity forms) and the run's pipeline adds nothing to it, the same episodes are the
rows of one batched env (envs/batched.py): row i starts where the core starts with episode i's seed
(`reset_to_core_seeds`), and one array step moves every row. Same start states, same dynamics (the batched
equations are the core's, line for line), so the same returns and lengths:
tests/speed/test_array_evaluation.py holds them equal to the reference's, exactly.

A seed batch's evaluation (32 seeds x 10 episodes) is 320 rows of one env instead of 320 envs stepped one by
one; `benches/batched_seeds.py` measures what it saves.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from ..envs.batched import BATCHED_ENVS, ArrayBatchedEnv
from ..envs.core import UnknownEnvError, resolve_env_id
from ..envs.pipeline import Pipeline


def array_twin(env_id: str, env_kwargs: dict | None, pipeline: Pipeline | None, act: Any) -> type[ArrayBatchedEnv] | None:
    """The batched env that plays `env_id`'s episodes for this policy, or None where only the reference can: a
    gymnasium env, options for the env, a pipeline with steps of its own, or a policy with memory."""
    try:
        resolved = resolve_env_id(env_id)
    except UnknownEnvError:
        return None
    if env_kwargs or (pipeline is not None and pipeline != Pipeline()) or getattr(act, "state_size", 0):
        return None
    return BATCHED_ENVS.get(resolved)


def play_in_arrays(
    act: Callable[..., Any], env_cls: type[ArrayBatchedEnv], seeds: Sequence[int]
) -> tuple[list[float], list[int]]:
    """Each episode's return and length, episode i seeded `seeds[i]`; the policy sees the unfinished episodes'
    observations, as in the reference (a finished row steps on with its last action, its result kept)."""
    env = env_cls(len(seeds))
    obs = env.reset_to_core_seeds(seeds)
    returns, lengths = [0.0] * len(seeds), [0] * len(seeds)
    takes_rows = getattr(act, "takes_rows", False)
    live = np.arange(len(seeds))
    actions = None
    while live.size:
        chosen = np.asarray(act(obs[live], rows=live.tolist()) if takes_rows else act(obs[live]))
        actions = chosen.copy() if actions is None else actions
        actions[live] = chosen
        step = env.step(actions)
        ended = (step.terminated | step.truncated)[live]
        for i in live[ended].tolist():
            returns[i], lengths[i] = float(step.episode_return[i]), int(step.episode_length[i])
        live, obs = live[~ended], step.obs
    env.close()
    return returns, lengths
