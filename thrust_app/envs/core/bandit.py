"""The simple contextual bandit from Thrust's first example: two contexts, two levers, one step.

Each episode shows one of two contexts (observation 0.0 or 1.0, equally likely); pulling the lever
that matches the context pays 1, the other pays 0, and the episode ends. A random policy scores
50%; a policy that reads the context scores 100%.
"""

from __future__ import annotations

import random
from typing import Any

from .base import Box, CoreEnv, Discrete

#: The lever that pays in each context: context c pays on lever CORRECT_LEVER[c].
CORRECT_LEVER = (0, 1)


class SimpleBandit(CoreEnv):
    """Two contexts, two levers, reward 1 for the right lever of the context shown."""

    id = "thrust/Bandit-v0"
    observation_space = Box(low=(0.0,), high=(1.0,), shape=(1,))
    action_space = Discrete(2)
    max_episode_steps = None  # every episode terminates after its one step

    def __init__(self) -> None:
        super().__init__()
        self.context = 0
        self.last_action: int | None = None
        self.last_reward: float | None = None

    def _reset(self, rng: random.Random) -> list[float]:
        self.context = rng.randrange(2)
        self.last_action = None
        self.last_reward = None
        return [float(self.context)]

    def _step(self, action: int) -> tuple[list[float], float, bool, bool]:
        reward = 1.0 if action == CORRECT_LEVER[self.context] else 0.0
        self.last_action, self.last_reward = action, reward
        return [float(self.context)], reward, True, False

    def render_state(self) -> dict[str, Any]:
        return {
            "context": self.context,
            "correct_lever": CORRECT_LEVER[self.context],
            "last_action": self.last_action,
            "last_reward": self.last_reward,
        }
