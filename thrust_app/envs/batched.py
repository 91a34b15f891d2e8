"""Batched Bandit, CartPole and Pendulum: N copies stepped in array operations, no loop over envs.

Each is written once against the array API, so the same code steps numpy arrays on the CPU and
torch tensors on the CPU or a GPU (`backend="torch", device="cuda"`) with no copy to the host.
The dynamics are the cores' (`thrust_app.envs.core`), line for line; tests hold them equal.
Auto-reset draws fresh start states for every copy and keeps them only where an episode ended,
which costs a few array ops but never a device-to-host sync.
"""

from __future__ import annotations

import functools
import itertools
import math
from abc import abstractmethod
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from .arrays import BackendName, make_backend
from .core import Box, Discrete, InvalidActionError, make_core
from .core import bandit as bandit_core
from .core import cartpole as cp
from .core import hidden_velocity as hv
from .core import pendulum as pd
from .vec import BatchStep, LoopVecEnv, VecEnv

if TYPE_CHECKING:
    from .pipeline import Pipeline


def validate_actions(actions: Any, space: Discrete | Box, num_envs: int, backend: Any) -> None:
    """An InvalidActionError naming the first env whose action is not of `space` (shape, dtype or bounds)."""
    xp = backend.xp
    if isinstance(space, Discrete):
        if tuple(actions.shape) != (num_envs,):
            raise InvalidActionError(f"actions have shape {tuple(actions.shape)}; expected ({num_envs},), one int per env")
        if not xp.isdtype(actions.dtype, "integral"):
            raise InvalidActionError(f"actions have dtype {actions.dtype}; expected integers in [0, {space.n - 1}]")
        bad = (actions < 0) | (actions >= space.n)
        limits = f"[0, {space.n - 1}]"
    else:
        expected = (num_envs, *space.shape)
        if tuple(actions.shape) != expected:
            raise InvalidActionError(f"actions have shape {tuple(actions.shape)}; expected {expected}")
        low = backend.asarray(space.low, dtype=actions.dtype)
        high = backend.asarray(space.high, dtype=actions.dtype)
        bad = xp.any(~((actions >= low) & (actions <= high)), axis=tuple(range(1, actions.ndim)))
        limits = f"[{space.low}, {space.high}] (clip to the action space; NaN is never valid)"
    if bool(xp.any(bad)):
        index = int(xp.argmax(xp.astype(bad, xp.int8)))
        raise InvalidActionError(f"action of env {index} is {actions[index].tolist()}, outside {limits}")


class ArrayBatchedEnv(VecEnv):
    """Shared batching: state is an (N, k) float array; subclasses give start states and dynamics."""

    core_id: str
    #: The attributes that carry the copies from one step to the next; `step` replaces them with new arrays and
    #: changes none in place (cuda_graphs.CapturedCollection relies on both).
    state_arrays = ("state", "steps", "returns")

    def __init__(
        self,
        num_envs: int,
        seed: int | None = None,
        backend: BackendName = "numpy",
        device: str = "cpu",
        check_actions: bool = True,
    ) -> None:
        if num_envs < 1:
            raise ValueError(f"num_envs must be >= 1, got {num_envs}")
        core = make_core(self.core_id)
        self.env_id = core.id
        self.observation_space = core.observation_space
        self.action_space = core.action_space
        self.max_episode_steps = core.max_episode_steps
        self.num_envs = num_envs
        self.backend = make_backend(backend, seed, device)
        #: Validating actions needs one device-to-host sync per step; hot loops that produce actions
        #: from the action space itself may turn it off.
        self.check_actions = check_actions
        xp = self.xp
        self.state = self._start_state(num_envs)
        self.steps = xp.zeros((num_envs,), dtype=xp.int64, device=self.backend.device)
        self.returns = xp.zeros((num_envs,), dtype=xp.float64, device=self.backend.device)
        #: One copy on the host steps the core's own scalar dynamics (the batched ones are the same equations,
        #: line for line; tests hold them equal): pure Python costs about 2 us a step where array ops on 1-row
        #: arrays cost about 45. Off-policy runs (DQN, SAC) act one env at a time, so this is their env step.
        self.scalar_core = core if backend == "numpy" and num_envs == 1 else None

    @abstractmethod
    def _start_state(self, n: int) -> Any:
        """Fresh start states, (n, k) float64."""

    @abstractmethod
    def _observe(self, state: Any) -> Any:
        """Observations (n, *obs_shape) float32 of states (n, k)."""

    @abstractmethod
    def _dynamics(self, state: Any, actions: Any) -> tuple[Any, Any, Any]:
        """(next state, reward float64, terminated bool) for every copy."""

    def reset(self, seed: int | None = None) -> Any:
        if seed is not None:
            self.backend.seed(seed)
        xp = self.xp
        self.state = self._start_state(self.num_envs)
        self.steps = xp.zeros_like(self.steps)
        self.returns = xp.zeros_like(self.returns)
        return self._observe(self.state)

    def get_state(self) -> dict[str, Any]:
        import torch

        to_tensor = lambda x: torch.as_tensor(x).clone()  # noqa: E731  (numpy or torch, saved as torch)
        return {
            "state": to_tensor(self.state),
            "steps": to_tensor(self.steps),
            "returns": to_tensor(self.returns),
            "rng": self.backend.get_state(),
        }

    def set_state(self, saved: dict[str, Any]) -> None:
        as_backend = lambda t: self.backend.asarray(t.numpy() if self.backend.name == "numpy" else t)  # noqa: E731
        self.state, self.steps, self.returns = (as_backend(saved[k]) for k in ("state", "steps", "returns"))
        self.backend.set_state(saved["rng"])

    def step(self, actions: Any) -> BatchStep:
        actions = self.backend.asarray(actions)
        if self.check_actions:
            validate_actions(actions, self.action_space, self.num_envs, self.backend)
        if self.scalar_core is not None:
            return self._step_one(actions)
        out, self.state, self.steps, self.returns = self._advance(
            self.state, self.steps, self.returns, actions, self._start_state(self.num_envs)
        )
        return out

    def _advance(self, state: Any, steps: Any, returns: Any, actions: Any, starts: Any) -> tuple[BatchStep, Any, Any, Any]:
        """One step of copies in (state, steps, returns) with `actions`, a copy whose episode ends restarting at its
        row of `starts`: the BatchStep and the new (state, steps, returns). Changes no array in place."""
        xp = self.xp
        state, reward, terminated = self._dynamics(state, actions)
        steps, returns = steps + 1, returns + reward
        if self.max_episode_steps is not None:
            truncated = steps >= self.max_episode_steps
        else:
            truncated = xp.zeros_like(terminated)
        done = terminated | truncated
        final_obs, episode_return, episode_length = self._observe(state), returns, steps
        state = xp.where(done[:, None], starts, state)
        steps, returns = xp.where(done, 0, steps), xp.where(done, 0.0, returns)
        out = BatchStep(
            obs=self._observe(state),
            reward=xp.astype(reward, xp.float32),
            terminated=terminated,
            truncated=truncated,
            final_obs=final_obs,
            episode_return=episode_return,
            episode_length=episode_length,
        )
        return out, state, steps, returns

    def _step_one(self, actions: Any) -> BatchStep:
        """`step` for one numpy copy through the core's scalar `_step`; new start states are drawn only when
        the episode ends (the array path draws every step and keeps them where one ended)."""
        import numpy as np

        core = self.scalar_core
        self._load_core(core, self.state[0])
        action = int(actions[0]) if isinstance(self.action_space, Discrete) else [float(v) for v in actions[0]]
        obs, reward, terminated, _ = core._step(action)
        steps, episode_return = int(self.steps[0]) + 1, float(self.returns[0]) + reward
        truncated = self.max_episode_steps is not None and steps >= self.max_episode_steps
        final_obs = np.asarray([obs], dtype=np.float32)
        if terminated or truncated:
            self.state, self.steps, self.returns = self._start_state(1), np.zeros(1, np.int64), np.zeros(1)
            next_obs = self._observe(self.state)
        else:
            self.state = np.asarray([self._core_state(core)], dtype=np.float64)
            self.steps, self.returns = np.asarray([steps]), np.asarray([episode_return])
            next_obs = final_obs
        return BatchStep(
            obs=next_obs,
            reward=np.asarray([reward], dtype=np.float32),
            terminated=np.asarray([terminated]),
            truncated=np.asarray([truncated]),
            final_obs=final_obs,
            episode_return=np.asarray([episode_return]),
            episode_length=np.asarray([steps], dtype=np.int64),
        )

    def _load_core(self, core: Any, row: Any) -> None:
        """Put one copy's state row into `core` (its state list; the bandit overrides)."""
        core.state = row.tolist()

    def _core_state(self, core: Any) -> list[float]:
        """`core`'s state as a state row."""
        return core.state

    def reset_to_core_seeds(self, seeds: Sequence[int]) -> Any:
        """Start copy i where the core starts an episode with seed `seeds[i]` (the episode the registered
        single env, `gymnasium.make(env_id).reset(seed=seeds[i])`, plays); the observations. Needs one copy per seed."""
        if len(seeds) != self.num_envs:
            raise ValueError(f"{len(seeds)} seeds for {self.num_envs} copies; give one seed per copy")
        core, rows = make_core(self.core_id), []
        for seed in seeds:
            core.reset(seed=int(seed))
            rows.append(self._core_state(core))
        xp = self.xp
        self.state = self.backend.asarray(rows, dtype=xp.float64)
        self.steps, self.returns = xp.zeros_like(self.steps), xp.zeros_like(self.returns)
        return self._observe(self.state)


def step_together(envs: Sequence[ArrayBatchedEnv], actions: Any) -> BatchStep:
    """`step` of several envs of one kind (array path: more than one copy each, one backend) as one array step:
    `actions` are theirs one after another, and so are the BatchStep's rows. Each env ends as its own `step`
    would leave it, its fresh start states drawn from its own generator."""
    first, sizes = envs[0], [env.num_envs for env in envs]
    if any(type(env) is not type(first) or env.scalar_core is not None for env in envs):
        raise ValueError("step_together steps array-batched envs of one kind, more than one copy each")
    xp = first.xp
    actions = first.backend.asarray(actions)
    if first.check_actions:
        validate_actions(actions, first.action_space, sum(sizes), first.backend)
    joined = [xp.concat([getattr(env, name) for env in envs]) for name in ("state", "steps", "returns")]
    starts = xp.concat([env._start_state(env.num_envs) for env in envs])
    out, *arrays = first._advance(*joined, actions, starts)
    offsets = [0, *itertools.accumulate(sizes)]
    for env, begin, end in zip(envs, offsets, offsets[1:], strict=False):
        env.state, env.steps, env.returns = (array[begin:end] for array in arrays)
    return out


class BatchedBandit(ArrayBatchedEnv):
    """The simple contextual bandit; state column 0 is the context (0.0 or 1.0)."""

    core_id = bandit_core.SimpleBandit.id

    def _start_state(self, n: int) -> Any:
        return self.xp.astype(self.backend.integers(2, (n, 1)), self.xp.float64)

    def _observe(self, state: Any) -> Any:
        return self.xp.astype(state, self.xp.float32)

    def _load_core(self, core: Any, row: Any) -> None:
        core.context = int(row[0])

    def _core_state(self, core: Any) -> list[float]:
        return [float(core.context)]

    def _dynamics(self, state: Any, actions: Any) -> tuple[Any, Any, Any]:
        xp = self.xp
        context = xp.astype(state[:, 0], xp.int64)
        correct = xp.take(self.backend.asarray(bandit_core.CORRECT_LEVER, dtype=xp.int64), context)
        reward = xp.astype(actions == correct, xp.float64)
        return state, reward, xp.ones_like(actions, dtype=xp.bool)


class BatchedCartPole(ArrayBatchedEnv):
    """CartPole-v1 dynamics on (N, 4) states: x, x_dot, theta, theta_dot."""

    core_id = cp.CartPole.id

    def _start_state(self, n: int) -> Any:
        return self.backend.uniform(-cp.RESET_BOUND, cp.RESET_BOUND, (n, 4), self.xp.float64)

    def _observe(self, state: Any) -> Any:
        return self.xp.astype(state, self.xp.float32)

    def _dynamics(self, state: Any, actions: Any) -> tuple[Any, Any, Any]:
        xp = self.xp
        x, x_dot, theta, theta_dot = (state[:, i] for i in range(4))
        force = xp.astype(2 * actions - 1, xp.float64) * cp.FORCE_MAG
        costheta, sintheta = xp.cos(theta), xp.sin(theta)
        temp = (force + cp.POLE_MASS_LENGTH * theta_dot**2 * sintheta) / cp.TOTAL_MASS
        thetaacc = (cp.GRAVITY * sintheta - costheta * temp) / (
            cp.HALF_POLE_LENGTH * (4.0 / 3.0 - cp.MASS_POLE * costheta**2 / cp.TOTAL_MASS)
        )
        xacc = temp - cp.POLE_MASS_LENGTH * thetaacc * costheta / cp.TOTAL_MASS
        new_state = xp.stack(
            [x + cp.TAU * x_dot, x_dot + cp.TAU * xacc, theta + cp.TAU * theta_dot, theta_dot + cp.TAU * thetaacc], axis=1
        )
        x, theta = new_state[:, 0], new_state[:, 2]
        terminated = (x < -cp.X_LIMIT) | (x > cp.X_LIMIT) | (theta < -cp.THETA_LIMIT) | (theta > cp.THETA_LIMIT)
        return new_state, xp.ones_like(x), terminated


class BatchedPendulum(ArrayBatchedEnv):
    """Pendulum-v1 dynamics on (N, 2) states: theta, theta_dot."""

    core_id = pd.Pendulum.id

    def _start_state(self, n: int) -> Any:
        xp = self.xp
        theta = self.backend.uniform(-math.pi, math.pi, (n, 1), xp.float64)
        theta_dot = self.backend.uniform(-1.0, 1.0, (n, 1), xp.float64)
        return xp.concat([theta, theta_dot], axis=1)

    def _observe(self, state: Any) -> Any:
        xp = self.xp
        theta = state[:, 0]
        return xp.astype(xp.stack([xp.cos(theta), xp.sin(theta), state[:, 1]], axis=1), xp.float32)

    def _dynamics(self, state: Any, actions: Any) -> tuple[Any, Any, Any]:
        xp = self.xp
        theta, theta_dot = state[:, 0], state[:, 1]
        u = xp.clip(xp.astype(actions[:, 0], xp.float64), -pd.MAX_TORQUE, pd.MAX_TORQUE)
        normalized = ((theta + math.pi) % (2 * math.pi)) - math.pi
        costs = normalized**2 + 0.1 * theta_dot**2 + 0.001 * (u**2)
        new_theta_dot = (
            theta_dot + (3 * pd.GRAVITY / (2 * pd.LENGTH) * xp.sin(theta) + 3.0 / (pd.MASS * pd.LENGTH**2) * u) * pd.DT
        )
        new_theta_dot = xp.clip(new_theta_dot, -pd.MAX_SPEED, pd.MAX_SPEED)
        new_state = xp.stack([theta + new_theta_dot * pd.DT, new_theta_dot], axis=1)
        return new_state, -costs, xp.zeros_like(theta, dtype=xp.bool)


class HiddenVelocityMixin:
    """The observation with the core's `hidden` entries multiplied by zero (core/hidden_velocity.py)."""

    hidden: tuple[int, ...]

    def _observe(self, state: Any) -> Any:
        obs = super()._observe(state)
        keep = [0.0 if i in self.hidden else 1.0 for i in range(obs.shape[1])]
        return obs * self.backend.asarray(keep, dtype=self.xp.float32)


class BatchedCartPoleNoVel(HiddenVelocityMixin, BatchedCartPole):
    core_id, hidden = hv.CartPoleNoVel.id, hv.CartPoleNoVel.hidden


class BatchedPendulumNoVel(HiddenVelocityMixin, BatchedPendulum):
    core_id, hidden = hv.PendulumNoVel.id, hv.PendulumNoVel.hidden


BATCHED_ENVS: dict[str, type[ArrayBatchedEnv]] = {
    cls.core_id: cls for cls in (BatchedBandit, BatchedCartPole, BatchedPendulum, BatchedCartPoleNoVel, BatchedPendulumNoVel)
}


def make_batched(
    name: str,
    num_envs: int,
    seed: int | None = None,
    backend: BackendName = "numpy",
    device: str = "cpu",
    check_actions: bool = True,
    pipeline: Pipeline | None = None,
    vec_env: str = "sync",
    **env_kwargs: Any,
) -> VecEnv:
    """N copies of an env: Thrust's array-batched form where there is one, else a loop of gymnasium envs.

    `name` is a Thrust alias or id, or any gymnasium id. `env_kwargs` (e.g. Snake's `width`) go to
    each looped env. `check_actions=False` skips validating actions in array-batched envs (each check
    is a device-to-host sync); trainers whose actions come from the action space use it. A `pipeline`
    (envs/pipeline.py) wraps each looped env with its training steps; `vec_env="async"` steps the copies in
    worker processes (envs/async_vec.py), `vec_env="envpool"` an Atari game's in EnvPool (envs/envpool_vec.py).
    """
    from . import make_env
    from .core import UnknownEnvError, resolve_env_id
    from .pipeline import Pipeline

    try:
        env_id = resolve_env_id(name)
    except UnknownEnvError:
        env_id = name
    if env_id in BATCHED_ENVS and (pipeline is None or pipeline == Pipeline()):
        if vec_env != "sync":
            raise ValueError(f"{env_id} steps all its copies at once in arrays; vec_env {vec_env!r} is for gymnasium envs")
        if env_kwargs:
            raise TypeError(f"{env_id} takes no options, got {sorted(env_kwargs)}")
        return BATCHED_ENVS[env_id](num_envs, seed=seed, backend=backend, device=device, check_actions=check_actions)
    if vec_env == "envpool":
        from .envpool_vec import EnvPoolVecEnv

        return EnvPoolVecEnv(env_id, num_envs, pipeline or Pipeline(), seed, backend)
    make_env(env_id, **env_kwargs).close()  # fail here, once, with a clear message for unknown names
    make_copy = functools.partial(make_env, env_id, pipeline, True, **env_kwargs)
    if vec_env == "async":
        from .async_vec import AsyncVecEnv

        return AsyncVecEnv(make_copy, num_envs, seed, backend, device)
    return LoopVecEnv(make_copy, num_envs, seed, backend, device)


__all__ = ["ArrayBatchedEnv", "BatchedBandit", "BatchedCartPole", "BatchedPendulum", "make_batched"]
