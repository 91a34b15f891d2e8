"""A card game with a Dict observation and action masks, small enough for the browser player.

Each turn shows a target card and the hand: three of six cards, the target among them. Playing the target
scores 1, another card in hand 0, a card not in hand -1 (a forbidden move); 20 turns. The observation is a
Dict, `{"hand": MultiBinary(6), "target": Discrete(6)}`, held here as gymnasium flattens it (the hand's bits,
then the target one-hot: `observation_parts`); the legal moves are the hand (`action_masks()`, the way
sb3-contrib's MaskablePPO reads them). Random play over all cards scores about -6.7 a game, random legal
play +6.7, the best play 20.
"""

from __future__ import annotations

import random
from typing import Any

from .base import Box, CoreEnv, Discrete

CARDS, IN_HAND, TURNS = 6, 3, 20


class Cards(CoreEnv):
    """Play the target card from the hand; the hand is the action mask."""

    id = "thrust/Cards-v0"
    observation_space = Box(low=(0.0,) * 2 * CARDS, high=(1.0,) * 2 * CARDS, shape=(2 * CARDS,))
    action_space = Discrete(CARDS)
    max_episode_steps = TURNS
    #: The Dict the flat observation is made of, in gymnasium's flatten order (keys sorted): (key, kind, size).
    observation_parts = (("hand", "multi_binary", CARDS), ("target", "discrete", CARDS))

    def __init__(self) -> None:
        super().__init__()
        self.target, self.hand = 0, [False] * CARDS
        self.last_action: int | None = None
        self.last_reward: float | None = None

    def _deal(self, rng: random.Random) -> list[float]:
        self.target = rng.randrange(CARDS)
        others = rng.sample([card for card in range(CARDS) if card != self.target], IN_HAND - 1)
        self.hand = [card == self.target or card in others for card in range(CARDS)]
        return [float(held) for held in self.hand] + [float(card == self.target) for card in range(CARDS)]

    def _reset(self, rng: random.Random) -> list[float]:
        self.last_action = self.last_reward = None
        return self._deal(rng)

    def _step(self, action: int) -> tuple[list[float], float, bool, bool]:
        reward = 1.0 if action == self.target else (0.0 if self.hand[action] else -1.0)
        self.last_action, self.last_reward = action, reward
        return self._deal(self._rng), reward, False, False

    def action_masks(self) -> list[bool]:
        """The legal moves at the current observation: the cards in hand."""
        return list(self.hand)

    def render_state(self) -> dict[str, Any]:
        return {
            "hand": list(self.hand),
            "target": self.target,
            "last_action": self.last_action,
            "last_reward": self.last_reward,
        }
