"""Your own environment, with action masks: define it, register it, train PPO on it, evaluate, export.

A card game in miniature: each turn shows a target card and the three of six cards in hand; playing the
target scores 1, another card in hand 0, a card not in hand -1 (a forbidden move). The env offers its
legal moves the way sb3-contrib's MaskablePPO reads them, an `action_masks()` method (returning
`info["action_mask"]` from reset and step works too), so PPO samples, learns and evaluates among the
legal moves only, and the exported bundle takes the mask as its second input. Run:

    python examples/own_env_with_masks.py
"""

from __future__ import annotations

import tempfile

import gymnasium as gym
import numpy as np

from thrust_app.interop.bundle import OnnxPolicy
from thrust_app.interop.exporter import export_run
from thrust_app.training.evaluation import evaluate
from thrust_app.training.trainer import train

CARDS, IN_HAND, TURNS = 6, 3, 20


class TargetCard(gym.Env):
    """Observation: the target card one-hot, then the hand (1 = in hand). Action: the card to play."""

    def __init__(self) -> None:
        self.observation_space = gym.spaces.Box(0.0, 1.0, (2 * CARDS,), np.float32)
        self.action_space = gym.spaces.Discrete(CARDS)

    def _deal(self) -> np.ndarray:
        self.target = int(self.np_random.integers(CARDS))
        others = self.np_random.permutation([card for card in range(CARDS) if card != self.target])[: IN_HAND - 1]
        self.hand = np.zeros(CARDS, dtype=bool)
        self.hand[[self.target, *others]] = True
        return np.concatenate([np.eye(CARDS)[self.target], self.hand]).astype(np.float32)

    def action_masks(self) -> np.ndarray:
        """The legal moves at the current observation (True = allowed)."""
        return self.hand.copy()

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.turn = 0
        return self._deal(), {}

    def step(self, action):
        reward = 1.0 if action == self.target else (0.0 if self.hand[action] else -1.0)
        self.turn += 1
        return self._deal(), reward, False, self.turn >= TURNS, {}


gym.register("Examples/TargetCard-v0", entry_point=TargetCard)


def main() -> None:
    rng = np.random.default_rng(0)
    legal = evaluate(lambda obs, masks: [rng.choice(np.flatnonzero(m)) for m in masks], "Examples/TargetCard-v0", 20)
    print(f"random legal moves: {legal.mean:.1f} per game (the best play scores {TURNS})")
    with tempfile.TemporaryDirectory() as folder:
        summary = train("ppo", "Examples/TargetCard-v0", timesteps=12_288, run_dir=f"{folder}/run", progress=False)
        print(f"PPO after {summary['timesteps']:,} steps: {summary['eval_mean']:.1f} per game")
        bundle = export_run(f"{folder}/run", f"{folder}/bundle")
        print("bundle inputs:", [(i["name"], i["dtype"], i["shape"]) for i in bundle.manifest["inputs"]])
        policy = OnnxPolicy(bundle)
        played = evaluate(policy.act, "Examples/TargetCard-v0", 20, seed=100)
        print(f"the bundle in onnxruntime: {played.mean:.1f} per game")


if __name__ == "__main__":
    main()
