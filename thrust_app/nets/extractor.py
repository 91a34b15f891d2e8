"""A feature extractor of the user's own (SB3's `features_extractor_class`): a torch module in front of the
algorithm's MLPs, named in the config as `package.module:Class` with its keyword arguments as JSON, so that
a run folder says which it is and a resumed or exported run builds it again.

The class takes SB3's arguments, `(observation_space, **kwargs)` (the env's observations as the nets see them:
one flat Box, or the image), and says its output width as `features_dim` (SB3's BaseFeaturesExtractor) or
`out_dim`: an SB3 extractor class works as it is. Loading a run that names one imports its module (as
gymnasium's `module:Env` ids do), so the module must be importable where the run is read.
"""

from __future__ import annotations

import dataclasses
import importlib
import json
import sys
from collections.abc import Sequence
from typing import Any

import numpy as np
import torch
from torch import nn

from ..config import ConfigError


@dataclasses.dataclass(frozen=True)
class FeatureExtractor:
    """The config's `features_extractor` and `features_extractor_kwargs`, built per net by `build`."""

    path: str
    kwargs_json: str = "{}"

    def build(self, obs_shape: Sequence[int]) -> ExtractorModule:
        import gymnasium as gym

        space = gym.spaces.Box(-np.inf, np.inf, tuple(obs_shape), np.float32)
        return ExtractorModule(load_class(self.path)(space, **json.loads(self.kwargs_json or "{}")))


class ExtractorModule(nn.Module):
    """The user's module with the width Thrust's nets read (`out_dim`)."""

    def __init__(self, module: nn.Module) -> None:
        super().__init__()
        self.module = module
        width = getattr(module, "features_dim", None) or getattr(module, "out_dim", None)
        if not isinstance(width, int) or width < 1:
            raise ConfigError(f"{type(module).__name__} says no output width: give it features_dim (SB3's) or out_dim")
        self.out_dim = width

    def forward(self, obs: torch.Tensor) -> torch.Tensor:
        return self.module(obs)


def load_class(path: str) -> type[nn.Module]:
    """The class `package.module:Class` names (its module imported when it is not yet), a torch module class."""
    module_name, _, qualname = path.partition(":")
    if not module_name or not qualname:
        raise ConfigError(f"features_extractor {path!r}: give it as 'package.module:Class'")
    try:
        found: Any = sys.modules.get(module_name) or importlib.import_module(module_name)
        for part in qualname.split("."):
            found = getattr(found, part)
    except (ImportError, AttributeError) as err:
        raise ConfigError(f"features_extractor {path!r} cannot be loaded here ({err}); make its module importable") from None
    if not (isinstance(found, type) and issubclass(found, nn.Module)):
        raise ConfigError(f"features_extractor {path!r} is not a torch nn.Module class")
    return found


def class_path(cls: type) -> str:
    """`package.module:Class` of a class, as the config holds it."""
    return f"{cls.__module__}:{cls.__qualname__}"


__all__ = ["ExtractorModule", "FeatureExtractor", "class_path", "load_class"]
