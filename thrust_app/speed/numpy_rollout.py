"""An on-policy rollout collected with numpy end to end: the `acting="numpy"` path of A2C and PPO.

The reference is `rollout.collect_rollout`: per step the policy's torch forward and sampling, the env
step through EnvIO, and the bootstrap of truncated episodes. Here the same steps run on numpy arrays:
the actor-critic's forward on views of its flat parameters (numpy_acting.py), the env's own arrays, and
one conversion to tensors per rollout instead of seven per step. The categorical's Exp(1) noise is
drawn for the whole rollout at once from torch's global generator, which yields the same numbers as
the reference's per-step draws, so a discrete rollout takes the reference's actions
(tests/speed/test_numpy_acting.py); the Gaussian's noise is drawn the same way (the reference's per-step
normal draws follow another path through the generator: same distribution, other numbers).
"""

from __future__ import annotations

import numpy as np
import torch

from ..algos.rollout import RECORDED, Rollout, make_rollout, record_step, stacked
from ..envs.vec import VecEnv
from ..nets.policies import ActorCritic
from .numpy_acting import FastActorCritic


def rollout_noise(policy: ActorCritic, n_steps: int, n_envs: int) -> np.ndarray:
    """The noise of a whole rollout, (T, N, actions): Exp(1) per action (Gumbel-max), or N(0, 1) per dimension."""
    if policy.discrete:
        return torch.empty(n_steps, n_envs, policy.pi_head.out_features).exponential_().numpy()
    return torch.randn(n_steps, n_envs, policy.pi_head.out_features).numpy()


@torch.no_grad()
def collect_rollout_fast(
    env: VecEnv, obs: torch.Tensor, policy: ActorCritic, actor: FastActorCritic, n_steps: int, gamma: float
) -> tuple[Rollout, torch.Tensor]:
    """`collect_rollout`'s result for a numpy env on the CPU, `actor` being `FastActorCritic(policy)`."""
    noise = rollout_noise(policy, n_steps, env.num_envs)
    low, high = (None, None) if policy.discrete else (policy.low.numpy(), policy.high.numpy())
    recorded: dict[str, list[np.ndarray]] = {key: [] for key in RECORDED}
    obs_array = obs.numpy()
    for step_noise in noise:
        action, log_prob, value = actor(obs_array, step_noise)
        step = env.step(action if policy.discrete else np.clip(action, low, high))
        reward = step.reward
        if step.truncated.any():  # bootstrap a cut episode: r + gamma * V(s_final), as the reference does
            reward = reward + (step.truncated & ~step.terminated) * (gamma * actor.value(step.final_obs))
        record_step(recorded, (obs_array, action, log_prob, value, reward), step)
        obs_array = step.obs
    steps = stacked(recorded, lambda items: torch.from_numpy(np.stack(items)))
    return make_rollout(steps, torch.from_numpy(actor.value(obs_array))), torch.from_numpy(obs_array)
