"""`Model.predict` with SB3's conventions: one observation or a batch in (a Dict env's observation as its
dict), `(actions, state)` out, the state being a recurrent policy's memory (None for the others), cleared
where `episode_start` is true; action masks where the env offers them. One convention for every action
space: the action as the env takes it (an int or int array, a float array in the Box's bounds).
"""

from __future__ import annotations

import contextlib
from typing import Any

import numpy as np
import torch

from ..algos.base import Algorithm
from ..nets.obs_normalizer import NormalizedPolicy
from ..nets.policies import masked


class ObservationError(ValueError):
    """An observation that does not fit the model's observation space."""


def observation_batch(obs: Any, shape: tuple[int, ...], parted_space: Any | None) -> tuple[np.ndarray, bool]:
    """(batch of flat observations, whether `obs` was a batch already). A Dict/Tuple observation is flattened
    with gymnasium's `flatten` (as the env's observations were in training), a batch of them row by row."""
    if parted_space is not None and isinstance(obs, dict | tuple):
        return _flattened_parts(obs, parted_space)
    array = np.asarray(obs)
    if array.shape == tuple(shape):
        return array[None], False
    if array.shape[1:] == tuple(shape):
        return array, True
    batch = ", ".join(["N", *map(str, shape)])
    raise ObservationError(f"observation of shape {array.shape} does not fit this model: it takes {tuple(shape)} or ({batch})")


def _flattened_parts(obs: Any, space: Any) -> tuple[np.ndarray, bool]:
    from gymnasium.spaces import flatten
    from gymnasium.spaces.utils import flatdim

    if isinstance(obs, dict) and set(obs) != set(space.spaces):
        raise ObservationError(f"observation has keys {sorted(obs)}; this model's observations have {sorted(space.spaces)}")
    width = flatdim(space)
    with contextlib.suppress(ValueError, TypeError, AssertionError, IndexError):
        single = np.asarray(flatten(space, obs), np.float32)
        if single.shape == (width,):
            return single[None], False
    first = np.asarray(next(iter(obs.values() if isinstance(obs, dict) else obs)))  # a batch: one row per leading index
    try:
        flat = np.stack([np.asarray(flatten(space, _row(obs, i)), np.float32) for i in range(first.shape[0])])
    except (ValueError, TypeError, AssertionError, IndexError):
        flat = None
    if flat is None or flat.shape[1:] != (width,):
        raise ObservationError(f"observation does not fit this model's observation space {space}")
    return flat, True


def _row(obs: Any, i: int) -> Any:
    if isinstance(obs, dict):
        return {key: _row(value, i) for key, value in obs.items()}
    if isinstance(obs, tuple):
        return tuple(_row(value, i) for value in obs)
    return np.asarray(obs)[i]


@torch.no_grad()
def predict_actions(
    algo: Algorithm,
    policy: torch.nn.Module,
    obs: np.ndarray,
    masks: np.ndarray | None,
    state: np.ndarray | None,
    deterministic: bool,
) -> tuple[np.ndarray, np.ndarray | None]:
    """Actions (and a recurrent policy's next memory) for a batch of raw observations. `policy` is the
    algorithm's policy as it acts on raw observations (normalisation in front where the run normalises)."""
    device = algo.device
    obs_t = torch.as_tensor(obs if obs.dtype == np.uint8 else obs.astype(np.float32), device=device)
    mask = None if masks is None else torch.as_tensor(np.asarray(masks, bool), device=device)
    state_size = getattr(policy, "state_size", 0)
    if deterministic and not state_size:
        out = policy.act(obs_t) if mask is None else policy.act(obs_t, mask)
        return (out[1] if isinstance(out, tuple) else out).cpu().numpy(), None
    normalized = policy.normalizer(obs_t) if isinstance(policy, NormalizedPolicy) else obs_t
    if not state_size:
        return algo.sampled_action(normalized, mask).cpu().numpy(), None
    memory = torch.as_tensor(state, dtype=torch.float32, device=device)
    net = algo.policy
    if deterministic:
        *out, next_state = net.act(normalized, mask, state=memory)
        action = out[1] if len(out) == 2 else out[0]
    else:  # as `act`, the action drawn from the policy instead of taken at its mode
        head_out, next_state = net.actor_step(normalized, memory)
        action = net.env_action(net.draw(masked(head_out, mask))[0])
    return action.cpu().numpy(), next_state.cpu().numpy()


def start_memory(state: Any, episode_start: Any, n: int, state_size: int) -> np.ndarray | None:
    """A recurrent policy's memory for this step: `state` (zeros when None), rows cleared where
    `episode_start` is true; None for a policy without memory."""
    if not state_size:
        return None
    memory = np.zeros((n, state_size), np.float32) if state is None else np.array(state, np.float32).reshape(n, state_size)
    if episode_start is not None:
        memory[np.asarray(episode_start, bool).reshape(n)] = 0.0
    return memory


__all__ = ["ObservationError", "observation_batch", "predict_actions", "start_memory"]
