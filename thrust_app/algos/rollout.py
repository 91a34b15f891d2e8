"""On-policy experience (A2C, PPO): collect a rollout from a vec env, and GAE as a pure function.

Truncated episodes (time limits, Snake's starvation) are bootstrapped: the value of the
observation the episode was cut at is added to the last reward, discounted, as SB3 does.
Terminated episodes are not: there is nothing after them.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from ..envs.tensors import EnvIO
from ..envs.vec import VecEnv
from ..nets.policies import ActorCritic


@dataclass
class Rollout:
    """T steps of N envs; every tensor's leading axes are (T, N)."""

    obs: torch.Tensor
    actions: torch.Tensor
    log_probs: torch.Tensor
    values: torch.Tensor
    rewards: torch.Tensor  #: with truncation bootstraps already added
    dones: torch.Tensor  #: 1.0 where the episode ended at this step (terminated or truncated)
    last_values: torch.Tensor  #: (N,) value of the observation after the last step
    episode_returns: list[float]  #: returns of the episodes that finished during the rollout
    episode_lengths: list[int]
    masks: torch.Tensor | None = None  #: (T, N, n_actions) the actions allowed at each obs, for an env with masks
    #: A recurrent policy's: (T, N) 1.0 where the step is an episode's first, and (T, parts, layers, N, hidden) its
    #: memory before each step (nets/recurrent.py)
    starts: torch.Tensor | None = None
    states: torch.Tensor | None = None


#: What a rollout records per step, in this order.
#: "ended" only from envs that report whole episodes apart from their ends (BatchStep.episode_end), "masks" only
#: from envs that offer action masks.
RECORDED = (
    "obs", "actions", "log_probs", "values", "rewards", "terminated", "truncated", "returns", "lengths", "ended", "masks"
)  # fmt: skip


def record_step(recorded: dict[str, list], policy_items: tuple, step, mask=None) -> None:
    """Append one step to `recorded` (a list per RECORDED key): the observation, action, log-prob, value and
    reward in `policy_items`, the ends and episode figures from the env's `step` (tensors or arrays alike),
    and the action mask the action was sampled under."""
    items = (*policy_items, step.terminated, step.truncated, step.episode_return, step.episode_length, step.episode_end, mask)
    for key, item in zip(RECORDED, items, strict=True):
        if item is not None:
            recorded[key].append(item)


def stacked(recorded: dict[str, list], stack) -> dict:
    """The (T, N) stack of every key recorded (with `stack`: torch.stack, or numpy's made tensors)."""
    return {key: stack(items) for key, items in recorded.items() if items}


def make_rollout(steps: dict[str, torch.Tensor], last_values: torch.Tensor) -> Rollout:
    """A Rollout from the (T, N) stack of every RECORDED key and the values after the last step."""
    done = steps.pop("terminated") | steps.pop("truncated")
    returns = steps.pop("returns")
    lengths = steps.pop("lengths")
    ended = steps.pop("ended", done)
    steps.setdefault("masks", None)
    return Rollout(
        **steps,
        dones=done.float(),
        last_values=last_values,
        episode_returns=returns[ended].tolist(),
        episode_lengths=lengths[ended].tolist(),
    )


#: A collection's result before its episode figures are read on the host: the (T, N) stack of every RECORDED
#: key, the values after the last step, and the next observation.
CollectedSteps = tuple[dict[str, torch.Tensor], torch.Tensor, torch.Tensor]


@torch.no_grad()
def collect_steps(
    env: VecEnv, env_io: EnvIO, obs: torch.Tensor, policy: ActorCritic, n_steps: int, gamma: float
) -> CollectedSteps:
    """Run the policy for `n_steps` steps of every env. With the env's arrays on the learner's device this
    makes no host round trip, which is what lets cuda_graphs.CapturedCollection capture it. A policy with
    memory (recurrent PPO's RolloutMemory) is told after each step which episodes ended; one with gSDE draws its
    exploration weights when its schedule says."""
    recorded: dict[str, list[torch.Tensor]] = {key: [] for key in RECORDED}
    mask = env_io.masks(env)
    episodes_ended = getattr(policy, "episodes_ended", None)
    for t in range(n_steps):
        policy.resample_noise(t, env.num_envs)  # gSDE's exploration weights: at step 0, every sde_sample_freq steps
        action, log_prob, value = policy.sample(obs, mask)
        step = env_io.step(env, policy.env_action(action))
        reward = step.reward
        # On a device, always computing the bootstrap values is cheaper than asking the host whether any
        # episode was truncated (a sync per step); on the host the question is free.
        if env_io.env_on_device(env) or bool(step.truncated.any()):
            reward = reward + gamma * (step.truncated & ~step.terminated) * policy.value(step.final_obs)
        record_step(recorded, (obs, action, log_prob, value, reward), step, mask)
        if episodes_ended is not None:
            episodes_ended(step.terminated | step.truncated)
        obs, mask = step.obs, env_io.masks(env)
    steps = stacked(recorded, torch.stack)  # (T, N) each: one op per array, not per step
    return steps, policy.value(obs), obs


def collect_rollout(
    env: VecEnv, env_io: EnvIO, obs: torch.Tensor, policy: ActorCritic, n_steps: int, gamma: float
) -> tuple[Rollout, torch.Tensor]:
    """Run the policy for `n_steps` steps of every env; returns the rollout and the next observation."""
    steps, last_values, obs = collect_steps(env, env_io, obs, policy, n_steps, gamma)
    return make_rollout(steps, last_values), obs


def compute_gae(
    rewards: torch.Tensor,
    values: torch.Tensor,
    dones: torch.Tensor,
    last_values: torch.Tensor,
    gamma: float,
    gae_lambda: float,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Generalised advantage estimates (Schulman et al., 2016) and returns (T, N) from a rollout's rewards,
    values and ends. Returns are A_t + V(s_t), the targets of the value loss."""
    not_done = 1.0 - dones
    next_values = torch.cat([values[1:], last_values.unsqueeze(0)])
    # TD error of every step at once: delta_t = r_t + gamma * V(s_{t+1}) * (1 - done_t) - V(s_t)
    deltas = rewards + gamma * next_values * not_done - values
    decay = (gamma * gae_lambda) * not_done
    advantages = torch.empty_like(rewards)
    running = torch.zeros_like(last_values)
    for step in reversed(range(rewards.shape[0])):  # sequential: one op per step
        # A_t = delta_t + gamma * lambda * (1 - done_t) * A_{t+1}
        running = torch.addcmul(deltas[step], decay[step], running, out=advantages[step])
    return advantages, advantages + values
