"""Deterministic evaluation: K episodes on their own env instances, seeds `seed .. seed+K-1`.

The policy is any function from a batch of observations (numpy: float32, or uint8 frames; and the action
masks, for an env that offers them) to a batch of actions,
so the same code evaluates a torch policy and (without importing torch) an ONNX one. A policy with memory
says how wide it is (`state_size`); it is then called as act(obs, masks, state) and returns (actions, next
state), each episode's memory starting at zero.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from ..envs import make_env
from ..envs.pipeline import Pipeline
from ..envs.vec import env_action_mask, has_mask_method
from ..speed.array_evaluation import array_twin, play_in_arrays

#: An evaluation episode of an env with no time limit of its own (CliffWalking, a user's env) ends here: a
#: deterministic policy that never reaches a terminal state would otherwise evaluate forever.
UNLIMITED_EPISODE_CAP = 100_000


@dataclass
class EvalResult:
    returns: list[float]
    lengths: list[int]
    #: per episode, the env's `info["is_success"]` at its last step (goal envs report it); None if it reports none
    successes: list[bool] | None = None

    @property
    def success_rate(self) -> float | None:
        """The share of episodes ending in success (SB3's eval/success_rate), for an env that reports it."""
        return None if self.successes is None else statistics.fmean(self.successes)

    @property
    def mean(self) -> float:
        return statistics.fmean(self.returns)

    @property
    def std(self) -> float:
        return statistics.pstdev(self.returns)

    def as_dict(self) -> dict:
        figures = {"eval_mean": self.mean, "eval_std": self.std, "eval_returns": self.returns, "eval_lengths": self.lengths}
        return figures | ({} if self.successes is None else {"eval_success_rate": self.success_rate})


def evaluate(
    act: Callable[[np.ndarray], np.ndarray],
    env_id: str,
    episodes: int = 10,
    seed: int | Sequence[int] = 0,
    env_kwargs: dict | None = None,
    pipeline: Pipeline | None = None,
    in_arrays: bool = True,
) -> EvalResult:
    """Run `episodes` episodes side by side, one env each (episode i seeded seed + i, or seed[i]), stepping the
    unfinished ones per policy call, in the run's `pipeline` without its training-only steps (returns are the
    game's); episodes of an env without a time limit end at UNLIMITED_EPISODE_CAP steps. A policy with
    `takes_rows` is called as act(obs, rows=live), the episodes the rows are of (a seed batch's, per seed).
    `in_arrays`: play the episodes as rows of one array-batched env where the env has one (the same episodes and
    results, speed/array_evaluation.py); False: one gymnasium env per episode always (the reference)."""
    if episodes < 1:
        raise ValueError(f"episodes must be >= 1, got {episodes}")
    seeds = range(seed, seed + episodes) if isinstance(seed, int) else seed
    twin = array_twin(env_id, env_kwargs, pipeline, act) if in_arrays else None
    if twin is not None:
        return EvalResult(*play_in_arrays(act, twin, seeds))
    return play_on_own_envs(act, [make_env(env_id, pipeline, **(env_kwargs or {})) for _ in range(episodes)], seeds)


def play_on_own_envs(act: Callable[..., np.ndarray], envs: list, seeds: Sequence[int]) -> EvalResult:
    """The reference: episode i on its own gymnasium env `envs[i]`, seeded `seeds[i]`, the unfinished episodes
    stepped one by one after each policy call."""
    episodes = len(envs)
    cap = UNLIMITED_EPISODE_CAP if envs[0].spec is None or envs[0].spec.max_episode_steps is None else None
    resets = [env.reset(seed=int(s)) for s, env in zip(seeds, envs, strict=True)]
    obs = [o for o, _ in resets]
    method = has_mask_method(envs[0])  # asked once: the lookup walks the wrappers
    masks = [env_action_mask(env, info, method) for env, (_, info) in zip(envs, resets, strict=True)]
    returns, lengths, successes = [0.0] * episodes, [0] * episodes, [None] * episodes
    state_size, takes_rows = getattr(act, "state_size", 0), getattr(act, "takes_rows", False)
    memory = np.zeros((episodes, state_size), np.float32)  # each episode's, for a policy with memory
    live = list(range(episodes))
    while live:
        batch = np.stack([obs[i] for i in live])
        batch = batch if batch.dtype == np.uint8 else batch.astype(np.float32)
        # an env that offers action masks: the policy picks among the allowed actions (act(obs, masks))
        allowed = None if masks[live[0]] is None else np.stack([masks[i] for i in live])
        if state_size:
            actions, memory[live] = act(batch, allowed, memory[live])
        else:
            actions = act(batch, rows=live) if takes_rows else act(batch) if allowed is None else act(batch, allowed)
        actions = np.asarray(actions)
        still = []
        for i, action in zip(live, actions, strict=True):
            obs[i], reward, terminated, truncated, info = envs[i].step(action if action.ndim else action.item())
            masks[i] = env_action_mask(envs[i], info, method)
            returns[i] += float(reward)
            lengths[i] += 1
            if not (terminated or truncated or (cap is not None and lengths[i] >= cap)):
                still.append(i)
            elif "is_success" in info:
                successes[i] = bool(info["is_success"])
        live = still
    for env in envs:
        env.close()
    reported = None if any(success is None for success in successes) else successes
    return EvalResult(returns, lengths, reported)
