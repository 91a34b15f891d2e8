"""What the trainer needs of an algorithm: schedules set from training progress, one `iteration`
(collect, then learn), a deterministic policy to evaluate and export, and state to checkpoint.

An algorithm is written as its reference: torch acting and autograd updates. Its steps are plain
methods (on-policy `collect_steps`, `backward`, `optimizer_step`, PPO's `step_minibatch`; off-policy
`act`, `update`, SAC's `optimize`), so that the speed layer (`thrust_app/speed/switches.py`) can put a
fast, compiled or graphed form of a step in its place on one instance; no algorithm imports it."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, ClassVar

import torch
from torch import nn

from ..config import AlgoConfig, schedule
from ..envs.core import Box, Discrete, MultiDiscrete
from ..envs.tensors import EnvIO
from ..envs.vec import VecEnv
from ..nets.flat_params import FlatParameters, flat_optimizer_state


class ActionSpaceError(ValueError):
    """The algorithm cannot act in this env's action space."""


@dataclass
class Iteration:
    """What one iteration did: env steps taken, episodes finished, and the losses it saw."""

    obs: torch.Tensor
    steps: int
    episode_returns: list[float] = field(default_factory=list)
    episode_lengths: list[int] = field(default_factory=list)
    stats: dict[str, float] = field(default_factory=dict)


class Algorithm(ABC):
    """An RL algorithm bound to one env's spaces, one config and one device."""

    name: ClassVar[str]
    Config: ClassVar[type[AlgoConfig]]
    #: The action spaces it can act in.
    supports: ClassVar[tuple[type, ...]] = (Discrete, Box)
    #: Whether it samples and learns under the action masks an env offers (A2C, PPO: sb3-contrib's MaskablePPO).
    uses_masks: ClassVar[bool] = False

    def __init__(
        self,
        obs_shape: tuple[int, ...],
        action_space: Discrete | Box,
        config: AlgoConfig,
        device: torch.device,
        seed: int,
        obs_dtype: str = "float32",
        obs_parts: tuple | None = None,
    ) -> None:
        self.check_fits(action_space, "this env")
        self.obs_shape = obs_shape
        #: A Dict observation with images: its parts (envs/pipeline.py), which the nets read out of the flat vector.
        self.obs_parts = obs_parts
        #: The observations' dtype ("uint8" frames are stored as bytes and scaled inside the CNN).
        self.obs_dtype = obs_dtype
        self.action_space = action_space
        self.config = config
        self.device = device
        #: The algorithm's own random stream (minibatch order, exploration), checkpointed with it.
        self.generator = torch.Generator(device=device)
        self.generator.manual_seed(seed)
        self.num_timesteps = 0
        #: The run's step budget, set by the trainer: what a schedule that moves every env step (DQN's
        #: epsilon) measures progress against. None outside a run: schedules then move only with
        #: `apply_schedules`.
        self.total_timesteps: int | None = None
        #: The optimizers' learning rate now (set by apply_schedules).
        self.learning_rate: float = config.learning_rate
        #: Things the user should know about how this run computes (a fallback taken, say); printed at start.
        self.notes: list[str] = []
        #: Called after `load_state_dict` (a captured CUDA graph then captures again: the optimizers' state
        #: tensors were replaced).
        self.after_load: list[Callable[[], None]] = []
        #: What the speed layer chose for this instance (speed/switches.py); None: the reference throughout.
        self.speed: Any = None

    @classmethod
    def check_fits(cls, action_space: Discrete | Box | MultiDiscrete, env_id: str) -> None:
        if not isinstance(action_space, cls.supports):
            names = {Discrete: "Discrete", Box: "Box (continuous)", MultiDiscrete: "MultiDiscrete"}
            kind = names[type(action_space)]
            needs = " or ".join(names[s].split(" ")[0] for s in cls.supports)
            on_policy = "ppo, recurrent_ppo or a2c"
            fitting = {"Discrete": f"dqn, {on_policy}", "MultiDiscrete": on_policy}.get(kind, f"sac, td3, ddpg, {on_policy}")
            raise ActionSpaceError(
                f"{cls.name} needs a {needs} action space, but {env_id} has a {kind} one; "
                f"pick an algorithm that fits ({fitting})"
            )

    def apply_schedules(self, progress_remaining: float) -> None:
        """Set every scheduled value from the fraction of training left (1 at the start, 0 at the end): the
        learning rate of every optimizer here; algorithms add their own (PPO's clip range, DQN's epsilon)."""
        learning_rate = schedule(self.config.learning_rate, self.config.lr_schedule, progress_remaining)
        self.learning_rate = learning_rate
        for part in self.stateful_parts().values():
            if isinstance(part, torch.optim.Optimizer):
                set_learning_rate(part, learning_rate)

    def updated_tensors(self) -> list[torch.Tensor]:
        """Every tensor an update changes in place: the nets' flat buffers, the optimizers' parameters and
        state (what a captured update must restore after its warm-up calls)."""
        tensors: dict[int, torch.Tensor] = {}
        for part in self.stateful_parts().values():
            if isinstance(part, FlatParameters):
                tensors[id(part.flat)] = part.flat
            elif isinstance(part, torch.optim.Optimizer):
                for group in part.param_groups:
                    for param in group["params"]:
                        tensors[id(param)] = param
                        tensors |= {id(value): value for value in part.state[param].values() if torch.is_tensor(value)}
        return list(tensors.values())

    @abstractmethod
    def iteration(self, env: VecEnv, env_io: EnvIO, obs: torch.Tensor) -> Iteration:
        """Collect experience from `env` starting at `obs`, learn from it, and report."""

    @abstractmethod
    def iteration_steps(self, num_envs: int) -> int:
        """The env steps one iteration collects on `num_envs` envs before it learns."""

    @property
    @abstractmethod
    def policy(self) -> nn.Module:
        """The network whose `act(obs)` is the deterministic policy."""

    @torch.no_grad()
    def sampled_action(self, obs: torch.Tensor, mask: torch.Tensor | None = None) -> torch.Tensor:
        """An action of the stochastic policy for `obs` as SB3's `predict(deterministic=False)` gives it: the
        deterministic one here (TD3's and DDPG's: their exploration noise is for collecting only)."""
        return deterministic_action(self.policy, obs, mask)

    def use_normalizer(self, env: Any) -> None:
        """The run normalises observations and rewards through `env` (training/normalization.py's NormalizedVecEnv):
        an on-policy algorithm learns from the normalised rollout as it comes, so nothing to do here; an
        off-policy one keeps the env's own values and normalises what it samples (off_policy.py)."""
        return None

    def episodes_restarted(self) -> None:
        """The env started fresh episodes (a resumed gymnasium env restarts them): an algorithm that remembers
        the episodes in progress (recurrent PPO's memory) forgets them here; the others have nothing to forget."""
        return None

    def parameters_finite(self) -> bool:
        """True while every network's parameters are finite (one check per network's flat buffer)."""
        flats = [part.flat for part in self.stateful_parts().values() if isinstance(part, FlatParameters)]
        return bool(torch.stack([torch.isfinite(flat).all() for flat in flats]).all())

    @abstractmethod
    def stateful_parts(self) -> dict[str, Any]:
        """Everything with a `state_dict` that a checkpoint must hold (nets, optimizers, buffers)."""

    def state_dict(self) -> dict[str, Any]:
        state = {name: part.state_dict() for name, part in self.stateful_parts().items()}
        state["generator"] = self.generator.get_state()
        state["num_timesteps"] = self.num_timesteps
        return state

    def load_state_dict(self, state: dict[str, Any]) -> None:
        parts = self.stateful_parts()
        flat_nets = {id(part.flat): part for part in parts.values() if isinstance(part, FlatParameters)}
        for name, part in parts.items():
            saved = state[name]
            if isinstance(part, torch.optim.Optimizer):
                params = [p for group in part.param_groups for p in group["params"]]
                owner = flat_nets.get(id(params[0])) if len(params) == 1 else None
                if owner is not None and len(saved["param_groups"][0]["params"]) > 1:  # saved per parameter (v1)
                    saved = flat_optimizer_state(saved, list(owner.parameters()))
            part.load_state_dict(saved)
        self.load_generator_state(state["generator"])
        self.num_timesteps = state["num_timesteps"]
        for hook in self.after_load:
            hook()

    def load_generator_state(self, saved: torch.Tensor) -> None:
        """Continue the saved random stream, when it comes from the same kind of device. A CUDA generator's
        state (16 bytes) cannot seed a CPU one (5,056 bytes) or the other way round: a run trained on a GPU
        and loaded on the CPU (to export, watch or resume it there) keeps this generator, seeded with the
        run's seed, and says so in a note."""
        if saved.numel() == self.generator.get_state().numel():
            self.generator.set_state(saved)
        else:
            self.notes.append(
                f"the checkpoint's random stream was saved on another kind of device than {self.device.type}; "
                "this one continues from the run's seed"
            )


def deterministic_action(policy: nn.Module, obs: torch.Tensor, mask: torch.Tensor | None = None) -> torch.Tensor:
    """The action of `policy.act`: the argmax for discrete policies (among the actions `mask` allows, where
    the env offers masks), the bounded action otherwise."""
    out = policy.act(obs) if mask is None else policy.act(obs, mask)
    return out[1] if isinstance(out, tuple) else out


class NumpyPolicy:
    """A torch policy's deterministic `act` as `evaluate` calls it: numpy observations (and action masks) in,
    numpy actions out, computed on `device` (the policy's own unless given). A policy with memory (`state_size`
    > 0, recurrent PPO's) also takes each env's memory, zeros at an episode's start, and returns the next."""

    def __init__(self, policy: nn.Module, device: torch.device | None = None) -> None:
        self.policy = policy
        self.device = device if device is not None else next(policy.parameters()).device
        self.state_size: int = getattr(policy, "state_size", 0)

    def __call__(self, obs, masks=None, state=None):
        with torch.no_grad():
            obs_tensor = torch.as_tensor(obs, device=self.device)
            mask = None if masks is None else torch.as_tensor(masks, device=self.device)
            if not self.state_size:
                return deterministic_action(self.policy, obs_tensor, mask).cpu().numpy()
            *out, next_state = self.policy.act(obs_tensor, mask, state=torch.as_tensor(state, device=self.device))
            action = out[1] if len(out) == 2 else out[0]  # (logits, action) or the bounded action
            return action.cpu().numpy(), next_state.cpu().numpy()


def set_learning_rate(optimizer: torch.optim.Optimizer, lr: float) -> None:
    for group in optimizer.param_groups:
        group["lr"] = lr
