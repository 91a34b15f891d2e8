"""Observation pipelines around a gymnasium env: the zoo's Atari preprocessing, MinAtar's images channels
first, and a frame stack; and the Atari/MinAtar ids registered on first use.

A pipeline is part of a run's config under the zoo's names (`env_wrapper`, `frame_stack`), so that
training, evaluation, export checks and the dashboard's video all make the env the same way through
`make_env(name, pipeline)`. Two of Atari's steps shape the learning signal only (an episode ends on a
lost life, rewards become their sign): they are added with `training=True` and never in evaluation,
so evaluations and the training curve report the game's real score.
"""

from __future__ import annotations

import dataclasses
import re
from typing import Any, NamedTuple, get_args, get_type_hints

import gymnasium as gym
import numpy as np

from ..config import AlgoConfig
from .robotics import is_robotics, register_robotics

#: The `env_wrapper` choices: "atari" (gymnasium's AtariPreprocessing as the zoo's AtariWrapper sets it
#: up) and "minatar" (MinAtar's boolean H x W x C grid as float32 C x H x W, what a CNN reads).
ENV_WRAPPERS: tuple[str, ...] = get_args(get_type_hints(AlgoConfig)["env_wrapper"])

#: What installs each family of ids, for the one-line error when it is missing.
INSTALL_HINTS = {"ALE/": 'pip install "thrust_app[atari]" (ale-py)', "MinAtar/": 'pip install "thrust_app[minatar]"'}


@dataclasses.dataclass(frozen=True)
class Pipeline:
    """Which wrapper and how many frames stacked (1: none). Read from any config with these fields."""

    wrapper: str = "none"
    frame_stack: int = 1

    def __post_init__(self) -> None:
        if self.wrapper not in ENV_WRAPPERS:
            raise ValueError(f"env_wrapper must be one of {', '.join(ENV_WRAPPERS)}, got {self.wrapper!r}")
        if self.frame_stack < 1:
            raise ValueError(f"frame_stack must be >= 1 (1 = no stack), got {self.frame_stack}")

    @classmethod
    def of(cls, config: Any) -> Pipeline:
        """The pipeline a config names (an AlgoConfig, a saved config dict, or None for none)."""
        if config is None:
            return cls()
        get = config.get if isinstance(config, dict) else lambda key, default: getattr(config, key, default)
        return cls(get("env_wrapper", "none"), int(get("frame_stack", 1)))

    def make_kwargs(self, env_id: str) -> dict[str, Any]:
        """Arguments for `gym.make`: AtariPreprocessing skips frames itself, so the ALE env must not
        (ALE/*-v5 ids skip 4 by default; *NoFrameskip-v4 ids already skip none)."""
        if self.wrapper == "atari":
            if gym.spec(env_id).kwargs.get("frameskip", 1) != 1:
                return {"frameskip": 1}
        return {}

    def wrap(self, env: Any, training: bool = False) -> Any:
        """`env` inside this pipeline; `training` adds the steps that shape only the learning signal."""
        if self.wrapper == "atari":
            # noop reset (up to 30), max-pooled frame skip 4, 84x84 greyscale: SB3's AtariWrapper defaults
            env = gym.wrappers.AtariPreprocessing(env, noop_max=30, frame_skip=4, screen_size=84)
            if training:
                # the game's score and length, read by the vec env as the episode's (before the two below)
                env = gym.wrappers.RecordEpisodeStatistics(env)
                env = EpisodicLife(env)
            if "FIRE" in env.unwrapped.get_action_meanings():
                env = FireReset(env)
            if training:
                env = gym.wrappers.TransformReward(env, _sign)  # r -> sign(r), SB3's ClipRewardEnv
        elif self.wrapper == "minatar":
            env = ChannelsFirst(env)
        if self.frame_stack > 1:
            env = gym.wrappers.FrameStackObservation(env, self.frame_stack)
        return env

    def describe(self) -> str:
        parts = [] if self.wrapper == "none" else [f"{self.wrapper} preprocessing"]
        if self.frame_stack > 1:
            parts.append(f"{self.frame_stack} frames stacked")
        return ", ".join(parts) or "none"


#: Observation spaces made one flat float vector (gymnasium's `flatten`, what SB3's preprocessing and its
#: CombinedExtractor compute for vector parts): Discrete one-hot, MultiDiscrete one-hot per component,
#: MultiBinary as 0/1, and Tuple and Dict of those and of vector Boxes concatenated in the space's order.
FLATTENED_SPACES = (gym.spaces.Discrete, gym.spaces.MultiDiscrete, gym.spaces.MultiBinary, gym.spaces.Tuple, gym.spaces.Dict)


def flattened(env: Any) -> Any:
    """`env` with its observations one flat vector where its space is one of FLATTENED_SPACES; as it is
    otherwise (a Box; any other space is refused later, naming it). An image inside a Dict or Tuple is flattened
    too: the nets read it back out of the vector (`observation_parts`, nets' CombinedEncoder); a Box part of 2
    or more than 3 dimensions is refused here (neither a vector nor an image a CNN reads)."""
    space = env.observation_space
    if not isinstance(space, FLATTENED_SPACES):
        return env
    for path, part in _leaves(space):
        if isinstance(part, gym.spaces.Box) and len(part.shape) not in (0, 1, 3):
            raise ValueError(
                f"{env.spec.id if env.spec else type(env.unwrapped).__name__}: observation part {path or 'item'} has "
                f"shape {part.shape}; Thrust reads vectors and images (3 dimensions, channels first or last) in a Dict "
                "or Tuple: reshape it in a wrapper"
            )
        if not isinstance(part, (gym.spaces.Box, *FLATTENED_SPACES)):
            return env  # a Sequence, Graph or Text part: left to the one-line refusal that names the space
    return gym.wrappers.FlattenObservation(env)


class ObservationPart(NamedTuple):
    """One key of a Dict observation (or item of a Tuple): what the bundle takes as an input of its own, and the
    stretch of the flat vector it becomes (gymnasium's `flatten`: a Box as it is, a Discrete one-hot)."""

    name: str  #: the bundle's input: obs.<key> (obs.<key>.<key> nested, obs.<index> in a Tuple)
    kind: str  #: box, discrete, multi_discrete or multi_binary
    shape: tuple[int, ...]  #: the part as the env gives it (a Discrete's is ())
    nvec: tuple[int, ...]  #: the choices of a discrete part, per component (Discrete: (n,)); () for a Box
    size: int  #: its length in the flat vector
    dtype: str = "float32"  #: a Box part's dtype as the env gives it ("uint8" for byte images)

    @property
    def is_image(self) -> bool:
        """A Box of 3 dimensions: an image, C x H x W, or H x W x C (SB3: the smallest dimension is the channels)."""
        return self.kind == "box" and len(self.shape) == 3

    @property
    def channels_last(self) -> bool:
        return self.is_image and min(self.shape) == self.shape[-1] < self.shape[0]

    def describe(self) -> dict[str, Any]:
        """The manifest's entry (observation.parts)."""
        shape, nvec = list(self.shape), list(self.nvec)
        return {"name": self.name, "kind": self.kind, "shape": shape, "nvec": nvec, "size": self.size, "dtype": self.dtype}

    @classmethod
    def of(cls, entry: dict[str, Any]) -> ObservationPart:
        shape, nvec = tuple(entry["shape"]), tuple(entry["nvec"])
        return cls(entry["name"], entry["kind"], shape, nvec, int(entry["size"]), entry.get("dtype", "float32"))


def parted_space(env: Any) -> gym.spaces.Dict | gym.spaces.Tuple | None:
    """The Dict or Tuple observation space an env's flat observations were made from (`flattened`), else None."""
    while not isinstance(env, gym.wrappers.FlattenObservation):
        if not isinstance(env, gym.Wrapper):
            return None
        env = env.env
    space = env.env.observation_space
    return space if isinstance(space, gym.spaces.Dict | gym.spaces.Tuple) else None


def observation_parts(env: Any) -> list[ObservationPart] | None:
    """The parts of an env's Dict or Tuple observation, in the order of its flat vector; None for an env whose
    observations were not flattened from a Dict or Tuple."""
    space = parted_space(env)
    if space is None:
        return None
    parts = []
    for path, part in _leaves(space):
        keys = [key or index for key, index in re.findall(r"\['(.*?)'\]|\[(\d+)\]", path)]  # ['a'][0] -> a, 0
        name = ".".join(["obs", *keys])
        if isinstance(part, gym.spaces.Discrete):
            parts.append(ObservationPart(name, "discrete", (), (int(part.n),), int(part.n)))
        elif isinstance(part, gym.spaces.MultiDiscrete):
            nvec = tuple(int(n) for n in part.nvec.ravel())
            parts.append(ObservationPart(name, "multi_discrete", tuple(part.shape), nvec, sum(nvec)))
        elif isinstance(part, gym.spaces.MultiBinary):
            parts.append(ObservationPart(name, "multi_binary", tuple(part.shape), (), int(np.prod(part.shape))))
        else:  # a Box as it is (bytes stay bytes at the bundle's input)
            dtype = "uint8" if part.dtype == np.uint8 else "float32"
            parts.append(ObservationPart(name, "box", tuple(part.shape), (), int(np.prod(part.shape)), dtype))
    return parts


def _leaves(space: Any, path: str = "") -> list[tuple[str, Any]]:
    """Every non-composite part of a space, with where it sits (Dict keys, Tuple positions)."""
    if isinstance(space, gym.spaces.Dict):
        return [leaf for key, part in space.spaces.items() for leaf in _leaves(part, f"{path}[{key!r}]")]
    if isinstance(space, gym.spaces.Tuple):
        return [leaf for index, part in enumerate(space.spaces) for leaf in _leaves(part, f"{path}[{index}]")]
    return [(path, space)]


def _sign(reward: float) -> float:
    return float((reward > 0) - (reward < 0))


def register_on_demand(env_id: str) -> None:
    """Register Atari's ids (ale-py), MinAtar's (minatar) or gymnasium-robotics' (robotics.py) the first time one
    is asked for: gymnasium 1.x knows them only after their package is imported. A missing package is one line naming it."""
    if env_id in gym.registry:
        return
    if is_robotics(env_id):
        register_robotics(env_id)
        return
    if env_id.startswith("MinAtar/"):
        try:
            import minatar.gym
        except ImportError:
            raise ModuleNotFoundError(f"{env_id} needs MinAtar: {INSTALL_HINTS['MinAtar/']}") from None
        minatar.gym.register_envs()
        return
    try:
        import ale_py
    except ImportError:
        if env_id.startswith("ALE/") or "NoFrameskip" in env_id:
            raise ModuleNotFoundError(f"{env_id} is an Atari game: {INSTALL_HINTS['ALE/']}") from None
        return
    gym.register_envs(ale_py)


def is_atari(env_id: str) -> bool:
    """True for an id ale-py registers (ALE/Breakout-v5, BreakoutNoFrameskip-v4, ...)."""
    try:
        register_on_demand(env_id)
    except ModuleNotFoundError:
        return False
    spec = gym.registry.get(env_id)
    return spec is not None and str(spec.entry_point).startswith("ale_py")


class EpisodicLife(gym.Wrapper):
    """A lost life ends the episode for learning (terminated), but the game goes on: the next `reset`
    only presses no-op (SB3's EpisodicLifeEnv, after Mnih et al., 2015). A real reset comes at game over."""

    def __init__(self, env: Any) -> None:
        super().__init__(env)
        self.lives = 0
        self.game_over = True

    def step(self, action: Any):
        obs, reward, terminated, truncated, info = self.env.step(action)
        self.game_over = terminated or truncated
        lives = self.env.unwrapped.ale.lives()
        if 0 < lives < self.lives:
            terminated = True
        self.lives = lives
        return obs, reward, terminated, truncated, info

    def reset(self, **kwargs: Any):
        if self.game_over:
            obs, info = self.env.reset(**kwargs)
        else:
            obs, _, terminated, truncated, info = self.env.step(0)
            if terminated or truncated:  # the no-op itself ended the game
                obs, info = self.env.reset(**kwargs)
        self.lives = self.env.unwrapped.ale.lives()
        self.game_over = False
        return obs, info


class FireReset(gym.Wrapper):
    """Press FIRE after every reset (SB3's FireResetEnv): games such as Breakout wait for it, and a policy
    that has not learnt to press it would wait until the time limit. Outside EpisodicLife, so a lost life
    is followed by FIRE too."""

    def reset(self, **kwargs: Any):
        self.env.reset(**kwargs)
        obs, info = None, {}
        for action in (1, 2):  # FIRE, then the game's second action as SB3 does
            obs, _, terminated, truncated, info = self.env.step(action)
            if terminated or truncated:
                obs, info = self.env.reset(**kwargs)
        return obs, info


class ChannelsFirst(gym.ObservationWrapper):
    """An H x W x C observation as float32 C x H x W (MinAtar's boolean grids: what Thrust's CNN reads)."""

    def __init__(self, env: Any) -> None:
        super().__init__(env)
        height, width, channels = env.observation_space.shape
        self.observation_space = gym.spaces.Box(0.0, 1.0, (channels, height, width), np.float32)

    def observation(self, observation: Any) -> Any:
        return np.ascontiguousarray(np.moveaxis(observation, -1, 0), dtype=np.float32)
