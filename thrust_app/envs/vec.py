"""The vectorized-environment interface trainers use, and its plain form: N gymnasium envs in a loop.

A `VecEnv` steps `num_envs` copies at once and resets each copy the moment its episode ends
("same-step" auto-reset, as SB3 does). `BatchStep.final_obs` keeps the observation the episode
ended on, which is what bootstrapping a truncated episode needs.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable
from typing import Any, NamedTuple

from .arrays import Backend, BackendName, make_backend
from .core import Box, Discrete, MultiDiscrete


class BatchStep(NamedTuple):
    """One step of every copy. Arrays have the vec env's backend type; the leading axis is the env."""

    obs: Any  #: (N, *obs_shape) in the space's dtype, already reset where an episode ended
    reward: Any  #: (N,) float32
    terminated: Any  #: (N,) bool
    truncated: Any  #: (N,) bool
    final_obs: Any  #: (N, *obs_shape), the observation each copy reached before any reset
    episode_return: Any  #: (N,) float64, the game's return of the episode that just ended (valid where ended)
    episode_length: Any  #: (N,) int64, its length (valid where ended)
    #: (N,) bool where a whole episode as the user scores it ended; None: wherever terminated or truncated. They
    #: differ under training-only signals: an Atari life lost terminates for learning, the game goes on.
    episode_end: Any = None


def episode_ended(step: Any) -> Any:
    """Where `step` (a BatchStep or its tensor form) ended a whole episode: where its returns are valid."""
    return step.terminated | step.truncated if step.episode_end is None else step.episode_end


class VecEnv(ABC):
    """N copies of one environment behind one `reset` / `step`."""

    env_id: str
    num_envs: int
    observation_space: Box
    action_space: Discrete | Box | MultiDiscrete
    backend: Backend

    @property
    def xp(self) -> Any:
        """The array namespace of this env's arrays (numpy or torch, through array_api_compat)."""
        return self.backend.xp

    @abstractmethod
    def reset(self, seed: int | None = None) -> Any:
        """Reset every copy; returns observations (N, *obs_shape)."""

    @abstractmethod
    def step(self, actions: Any) -> BatchStep:
        """Step every copy with its action; copies whose episode ends are reset in the same call."""

    def close(self) -> None:
        """Release resources (nothing for the built-in envs)."""
        return None

    def get_state(self) -> dict[str, Any] | None:
        """Everything needed to continue exactly where this env is (for checkpoints), or None if it
        cannot be captured (a resumed run then starts fresh episodes)."""
        return None

    def set_state(self, state: dict[str, Any]) -> None:
        raise NotImplementedError(f"{type(self).__name__} cannot restore a saved state")

    def action_masks(self) -> Any | None:
        """(N, n_actions) bool: the actions each copy allows at its current observation, for an env that
        offers masks (see `env_action_mask`); None for one that does not."""
        return None

    def final_action_masks(self) -> Any | None:
        """Like `action_masks`, at the last step's `final_obs` (before any reset): what a bootstrapped target
        maximises over."""
        return self.action_masks()

    def restores_episodes(self, state: dict[str, Any] | None) -> bool:
        """Whether `set_state(state)` puts the episodes back where they were (else a resumed run resets)."""
        return state is not None


def env_action_mask(env: Any, info: dict, method: bool) -> Any | None:
    """The actions a gymnasium env allows at its current observation, the two ways sb3-contrib's MaskablePPO
    reads them: the env's (or a wrapper's) `action_masks()` method (`method`: `has_mask_method(env)`, asked
    once per env by the caller), else `info["action_mask"]` from the reset or step that gave the observation.
    None when the env offers neither."""
    import numpy as np

    if method:
        return np.asarray(env.get_wrapper_attr("action_masks")(), dtype=bool)
    mask = info.get("action_mask")
    return None if mask is None else np.asarray(mask, dtype=bool)


def check_count(num_envs: int) -> None:
    if num_envs < 1:
        raise ValueError(f"num_envs must be >= 1, got {num_envs}")


def has_mask_method(env: Any) -> bool:
    """True when the env (or one of its wrappers) has an `action_masks()` method."""
    try:
        return callable(env.get_wrapper_attr("action_masks"))
    except AttributeError:
        return False


def from_gym_space(space: Any, what: str, env_id: str) -> Box | Discrete | MultiDiscrete:
    """Thrust's description of a gymnasium Box, Discrete (or, for actions, MultiDiscrete / MultiBinary) space;
    any other kind is a clear error."""
    import gymnasium as gym
    import numpy as np

    if isinstance(space, gym.spaces.Discrete):
        if what == "observation":
            raise ValueError(f"{env_id}: Thrust needs a Box observation space, got {space}")
        if int(space.start) != 0:
            raise ValueError(f"{env_id}: Discrete action spaces must start at 0, got {space}")
        return Discrete(int(space.n))
    if what == "action" and isinstance(space, gym.spaces.MultiDiscrete):
        if np.any(space.start != 0) or space.nvec.ndim != 1:
            raise ValueError(f"{env_id}: MultiDiscrete action spaces must be flat and start at 0, got {space}")
        return MultiDiscrete(tuple(int(n) for n in space.nvec))
    if what == "action" and isinstance(space, gym.spaces.MultiBinary):
        if len(space.shape) != 1:
            raise ValueError(f"{env_id}: MultiBinary action spaces must be flat, got {space}")
        return MultiDiscrete((2,) * int(space.n))  # each bit a choice of two
    if isinstance(space, gym.spaces.Box):
        low = np.asarray(space.low, dtype=np.float64).ravel().tolist()
        high = np.asarray(space.high, dtype=np.float64).ravel().tolist()
        # byte images (C x H x W) stay bytes: a quarter of the memory, scaled inside the CNN; the rest is float32
        dtype = "uint8" if space.dtype == np.uint8 and what == "observation" and len(space.shape) == 3 else "float32"
        return Box(low=tuple(low), high=tuple(high), shape=tuple(int(d) for d in space.shape), dtype=dtype)
    raise ValueError(
        f"{env_id}: Thrust trains on Box, Discrete, MultiDiscrete, MultiBinary, Tuple and Dict observations and "
        f"Discrete, Box, MultiDiscrete or MultiBinary actions; this env's {what} space is {space}"
    )


class LoopVecEnv(VecEnv):
    """N gymnasium envs stepped one after another, with arrays at the boundary.

    Serves any gymnasium env with Box observations, and Thrust's Snake (whose growing body does not
    fit fixed-size arrays). Copy i is reset with `seed + i` first, so it replays what a single env
    with that seed would do; later resets continue each env's own generator. An env that reports its
    episodes the gymnasium way (`info["episode"]`, RecordEpisodeStatistics) is scored by that report,
    so a training-only signal (Atari's life loss, reward sign) does not change the returns it logs.
    """

    def __init__(
        self,
        make_env: Callable[[], Any],
        num_envs: int,
        seed: int | None = None,
        backend: BackendName = "numpy",
        device: str = "cpu",
    ) -> None:
        check_count(num_envs)
        self.envs = [make_env() for _ in range(num_envs)]
        first = self.envs[0]
        self.describe(first, num_envs, backend, seed, device)
        self.reports_episodes = reports_episodes(first)
        self._returns = [0.0] * num_envs
        self._lengths = [0] * num_envs
        self._masks: list[Any] | None = None  #: each copy's mask at its current observation (masked envs)
        self._mask_method = has_mask_method(first)

    def describe(self, first: Any, num_envs: int, backend: BackendName, seed: int | None, device: str) -> None:
        """Id, spaces and backend from one of the copies."""
        self.env_id = first.spec.id if first.spec is not None else type(first.unwrapped).__name__
        self.num_envs = num_envs
        self.observation_space = from_gym_space(first.observation_space, "observation", self.env_id)
        self.action_space = from_gym_space(first.action_space, "action", self.env_id)
        self.backend = make_backend(backend, seed, device)
        self._seed = seed

    def _stack(self, rows: list[Any]) -> Any:
        import numpy as np

        return self.backend.asarray(np.stack(rows).astype(self.observation_space.dtype, copy=False))

    def env_actions(self, actions: Any) -> Any:
        """The actions as a numpy array the envs take, one per env."""
        import numpy as np

        actions = actions.cpu().numpy() if hasattr(actions, "cpu") else np.asarray(actions)
        if len(actions) != self.num_envs:
            raise ValueError(f"expected {self.num_envs} actions (one per env), got {len(actions)}")
        return actions.astype(np.float32, copy=False) if isinstance(self.action_space, Box) else actions

    def reset(self, seed: int | None = None) -> Any:
        seed = self._seed if seed is None else seed
        self._seed = None
        self._returns = [0.0] * self.num_envs
        self._lengths = [0] * self.num_envs
        resets = [env.reset(seed=None if seed is None else seed + i) for i, env in enumerate(self.envs)]
        self.keep_masks([info for _, info in resets])
        self._final_masks = self._masks
        return self._stack([obs for obs, _ in resets])

    def keep_masks(self, infos: list[dict]) -> None:
        """Each copy's action mask at the observation it is now at (None throughout for an env without masks)."""
        if not self._mask_method and not any(info.get("action_mask") is not None for info in infos):
            self._masks = None
            return
        masks = [env_action_mask(env, info, self._mask_method) for env, info in zip(self.envs, infos, strict=True)]
        self._masks = None if all(mask is None for mask in masks) else masks

    def action_masks(self) -> Any | None:
        import numpy as np

        return None if self._masks is None else np.stack(self._masks)

    def step(self, actions: Any) -> BatchStep:
        actions = self.env_actions(actions)
        continuous = isinstance(self.action_space, Box)
        rows, infos, finals = [], [], [None] * self.num_envs
        for i, (env, action) in enumerate(zip(self.envs, actions, strict=True)):
            o, r, term, trunc, info = env.step(action if continuous or action.ndim else int(action))
            final = o
            if term or trunc:
                if self._masks is not None:
                    finals[i] = env_action_mask(env, info, self._mask_method)  # before the reset replaces it
                o, reset_info = env.reset()
                info = {**info, "action_mask": reset_info.get("action_mask")}  # the new episode's mask
            rows.append((o, final, r, term, trunc, *self.score(i, r, term or trunc, info)))
            infos.append(info)
        self.keep_masks(infos)
        if self._masks is not None:
            self._final_masks = [now if final is None else final for now, final in zip(self._masks, finals, strict=True)]
        return self.batch(rows)

    def final_action_masks(self) -> Any | None:
        import numpy as np

        return None if self._masks is None else np.stack(self._final_masks)

    def score(self, i: int, reward: float, done: bool, info: dict) -> tuple[float, int, bool]:
        """Env i's return and length after a step, and whether a whole episode ended there: the env's own
        report where it makes one, else counted here."""
        self._returns[i] += float(reward)
        self._lengths[i] += 1
        figures = (self._returns[i], self._lengths[i], done)
        if self.reports_episodes:
            episode = info.get("episode")
            figures = (float(episode["r"]), int(episode["l"]), True) if episode is not None else (0.0, 0, False)
        if done:
            self._returns[i], self._lengths[i] = 0.0, 0
        return figures

    def batch(self, rows: list[tuple]) -> BatchStep:
        """One BatchStep from per-env (obs, final obs, reward, terminated, truncated, return, length, ended)."""
        import numpy as np

        obs, final, rewards, terms, truncs, returns, lengths, ended = zip(*rows, strict=True)
        asarray = self.backend.asarray
        return BatchStep(
            obs=self._stack(list(obs)),
            reward=asarray(np.asarray(rewards, dtype=np.float32)),
            terminated=asarray(np.asarray(terms, dtype=bool)),
            truncated=asarray(np.asarray(truncs, dtype=bool)),
            final_obs=self._stack(list(final)),
            episode_return=asarray(np.asarray(returns, dtype=np.float64)),
            episode_length=asarray(np.asarray(lengths, dtype=np.int64)),
            episode_end=asarray(np.asarray(ended, dtype=bool)),
        )

    def close(self) -> None:
        for env in self.envs:
            env.close()


def reports_episodes(env: Any) -> bool:
    """True when gymnasium's RecordEpisodeStatistics sits somewhere in `env`'s wrappers."""
    import gymnasium as gym

    while isinstance(env, gym.Wrapper):
        if isinstance(env, gym.wrappers.RecordEpisodeStatistics):
            return True
        env = env.env
    return False
