"""Every speed switch, resolved in one place: which step of an algorithm each one replaces, when it can,
and the one note a run gets when it cannot.

An algorithm is its reference (torch acting, autograd updates; `thrust_app/algos/`). `apply_speed` puts a
faster form of a step in the reference step's place on one algorithm instance, as a run's settings ask:

- `acting`: numpy (default) or torch. Replaces A2C's/PPO's `collect` (numpy_rollout.py) and DQN's/SAC's
  `act` (numpy_exploration.py), the forwards in numpy (numpy_acting.py). Serves vector observations,
  a numpy env, the CPU.
- `update`: handwritten (default) or reference. Replaces A2C's/PPO's `backward` and `optimizer_step`
  (actor_critic_backward.py), DQN's `update` (dqn_backward.py), SAC's `optimize` (sac_backward.py), the
  MLP pieces in mlp_backward.py. Serves MLP nets (no CNN). A2C, PPO, DQN and SAC also take `numba`: the
  same steps compiled by numba (numba_actor_critic.py, numba_dqn.py, numba_sac.py, kernels in
  numba_kernels.py), on the CPU, float32, with a hidden layer (A2C/PPO: two or more).
- `cuda_graphs`: False (default) or True (PPO, DQN, SAC). Wraps PPO's `step_minibatch` and
  `collect_steps` and DQN's/SAC's `update` in a CUDA graph (cuda_graphs.py). Serves CUDA with
  update=handwritten and constant schedules; a collection also needs the env's arrays on the learner's GPU.

A setting asked for but not possible on this run falls back, one step towards the reference, with one
note in `algo.notes` (printed when the run starts): `fall_back` is the only place that writes one. Each
fast form is held equal to the reference step by a test under `tests/speed/` that calls the algorithm's
own reference method.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import partial

import torch

from ..algos.base import Algorithm
from ..algos.dqn import DQN
from ..algos.on_policy import OnPolicyAlgorithm
from ..algos.ppo import PPO
from ..algos.recurrent_ppo import RecurrentPPO
from ..algos.sac import SAC
from ..envs.vec import VecEnv
from ..nets.extractor import FeatureExtractor
from . import actor_critic_backward, dqn_backward, numba_nets, numpy_acting, sac_backward
from .cuda_graphs import GraphedCollection, GraphedStep, collection_unavailable_reason, unavailable_reason
from .mlp_backward import adam_step
from .numpy_exploration import NumpyExploration
from .numpy_rollout import collect_rollout_fast


@dataclass
class SpeedChoice:
    """What `apply_speed` put in place on one algorithm."""

    acting: str  #: "numpy", or "torch" (the reference)
    update: str  #: "numba", "handwritten", or "reference" (autograd)
    #: The steps wrapped by a CUDA graph, by the name of the method each replaces.
    graphed: dict[str, GraphedStep] = field(default_factory=dict)


def apply_speed(algo: Algorithm, env: VecEnv) -> SpeedChoice:
    """Resolve the run's `acting`, `update` and `cuda_graphs` settings for `algo` stepping `env`, and put
    each chosen form in place; returns (and keeps as `algo.speed`) what was chosen."""
    if isinstance(algo, RecurrentPPO):
        return reference_throughout(algo, "a recurrent policy has only its reference form")
    if getattr(algo.config, "use_sde", False):
        return reference_throughout(algo, "gSDE's state-dependent noise has only its reference form")
    if isinstance(algo.obs_parts, FeatureExtractor):
        return reference_throughout(algo, "a feature extractor of your own runs as torch runs it: reference only")
    if algo.obs_parts:
        return reference_throughout(algo, "a Dict observation with images goes through a CNN per image: reference only")
    if env.action_masks() is not None:
        return reference_throughout(algo, "the env offers action masks, which only the reference applies")
    choice = SpeedChoice(acting=choose_acting(algo, env), update=choose_update(algo))
    choice.graphed = choose_graphs(algo, env, choice.update != "reference")
    algo.speed = choice
    return choice


def reference_throughout(algo: Algorithm, reason: str) -> SpeedChoice:
    """The reference for every step, with a note for each setting that asked otherwise: an env with action
    masks (the fast forms compute unmasked logits), a recurrent policy (they have no memory)."""
    if algo.config.acting != "torch":
        fall_back(algo, "acting", algo.config.acting, "torch", reason)
    if algo.config.update != "reference":
        fall_back(algo, "update", algo.config.update, "reference", reason)
    if getattr(algo.config, "cuda_graphs", False):
        fall_back(algo, "cuda_graphs", True, "eager steps", reason)
    algo.speed = SpeedChoice(acting="torch", update="reference")
    return algo.speed


def fall_back(algo: Algorithm, setting: str, asked: object, instead: str, reason: str) -> None:
    """The one note of a setting that cannot serve this run: what was asked, what runs instead, and why."""
    algo.notes.append(f"{setting}={asked} falls back to {instead}: {reason}")


# -- acting -----------------------------------------------------------------------------------------
def choose_acting(algo: Algorithm, env: VecEnv) -> str:
    """`acting="numpy"`: the rollout (A2C, PPO) or the steps into the replay buffer (DQN, SAC) in numpy."""
    if algo.config.acting != "numpy":
        return "torch"
    reason = numpy_acting.unsupported_reason(algo.obs_shape, env, algo.device)
    if not reason and isinstance(algo, OnPolicyAlgorithm) and not algo.net.uses_cnn:
        reason = actor_critic_backward.towers_reason(algo.net)
    if not reason and not isinstance(algo, OnPolicyAlgorithm) and algo.config.activation != "relu":
        reason = relu_only(algo)
    if reason:
        fall_back(algo, "acting", "numpy", "torch", reason)
        return "torch"
    if isinstance(algo, OnPolicyAlgorithm):
        actor, config = numpy_acting.FastActorCritic(algo.net), algo.config
        algo.collect = lambda env, env_io, obs: collect_rollout_fast(env, obs, algo.net, actor, config.n_steps, config.gamma)
    else:
        algo.act = NumpyExploration(algo)
    return "numpy"


def relu_only(algo: Algorithm) -> str:
    return f"activation={algo.config.activation}: the off-policy nets' fast forms are written for ReLU"


# -- update -----------------------------------------------------------------------------------------
def written_out_unsupported(algo: Algorithm) -> str | None:
    """Why the written-out gradients cannot serve this algorithm's nets, or None when they can."""
    if isinstance(algo, OnPolicyAlgorithm):
        return actor_critic_backward.unsupported_reason(algo.net)
    if algo.config.activation != "relu":
        return relu_only(algo)
    if isinstance(algo, DQN):
        return dqn_backward.unsupported_reason(algo.q_net)
    if isinstance(algo, SAC) and algo.config.n_critics != 2:
        return f"n_critics={algo.config.n_critics}: the written-out SAC update is for two critics"
    return sac_backward.unsupported_reason(algo.obs_shape)


def choose_update(algo: Algorithm) -> str:
    """`update="handwritten"`: the gradients written out; `"numba"`: the same steps compiled by numba."""
    asked = algo.config.update
    if asked == "reference":
        return "reference"
    reason = written_out_unsupported(algo)
    if reason:
        fall_back(algo, "update", asked, "reference", reason)
        return "reference"
    chosen = asked
    if asked == "numba":
        stacks = (algo.actor.encoder,) if isinstance(algo, SAC) else ()
        reason = numba_nets.unsupported_reason(algo.device, algo.policy.flat.dtype, stacks)
        if not reason and isinstance(algo, OnPolicyAlgorithm) and not algo.net.towers.weights:
            reason = f"hidden={algo.config.hidden}: the compiled A2C/PPO update is written for two or more hidden layers"
        if reason:
            fall_back(algo, "update", "numba", "handwritten", reason)
            chosen = "handwritten"
        else:
            numba_nets.limit_blas_threads(torch.get_num_threads())
    install_update(algo, chosen)
    return chosen


def install_update(algo: Algorithm, chosen: str) -> None:
    """Put the `chosen` ("handwritten" or "numba") form of the algorithm's update step in place."""
    if chosen == "numba":  # numba loads only when asked for (0.3 s)
        from .numba_kernels import CACHED

        if not CACHED:
            reason = "no cache location is writable (NUMBA_CACHE_DIR names one)"
            fall_back(algo, "update", "numba", "kernels compiled in memory, in every run (DQN ~4 s, SAC ~7 s)", reason)
    if isinstance(algo, OnPolicyAlgorithm):
        if chosen == "numba":
            from .numba_actor_critic import compiled_backward

            algo.backward = partial(compiled_backward, algo.net)
        else:
            algo.backward = partial(actor_critic_backward.fast_backward, algo.net)
        algo.optimizer_step = partial(adam_step, algo.optimizer)  # Adam's fused kernel, without the bookkeeping
    elif chosen == "numba":
        if isinstance(algo, DQN):
            from .numba_dqn import compiled_dqn_update

            algo.update = partial(compiled_dqn_update, algo)
        else:
            from .numba_sac import compiled_sac_update

            algo.optimize = partial(compiled_sac_update, algo)
    elif isinstance(algo, DQN):
        algo.update = partial(dqn_backward.fast_dqn_update, algo)
    else:
        algo.optimize = partial(sac_backward.fast_sac_update, algo)


# -- CUDA graphs ------------------------------------------------------------------------------------
def choose_graphs(algo: Algorithm, env: VecEnv, written_out: bool) -> dict[str, GraphedStep]:
    """`cuda_graphs=True`: the update step (and PPO's collection, env on the GPU) captured at its second
    call and replayed; captured again after a checkpoint is loaded."""
    if not getattr(algo.config, "cuda_graphs", False):
        return {}
    schedules = {"lr_schedule": algo.config.lr_schedule}
    if isinstance(algo, PPO):
        schedules["clip_schedule"] = algo.config.clip_schedule
    graphed: dict[str, GraphedStep] = {}
    reason = unavailable_reason(algo.device, written_out, schedules)
    if reason:
        fall_back(algo, "cuda_graphs", True, "eager updates", reason)
    else:
        name = "step_minibatch" if isinstance(algo, PPO) else "update"
        graphed[name] = GraphedStep(getattr(algo, name), algo.updated_tensors)
    if isinstance(algo, PPO) and algo.device.type == "cuda":
        reason = collection_unavailable_reason(env, algo.device)
        if reason:
            fall_back(algo, "cuda_graphs", True, "an eager collection", reason)
        else:
            graphed["collect_steps"] = GraphedCollection(algo.collect_steps)
    for name, step in graphed.items():
        step.enabled = True
        setattr(algo, name, step)
        algo.after_load.append(step.forget)
    return graphed
