"""Your own environment that needs memory: recurrent PPO trains on it, exports it, and the bundle carries it.

A game of recall: the first turn shows which of four lamps is the lit one, then the lamps go dark; at the last
turn the player must press the lamp it saw lit (+1, else 0). The observation at that turn says nothing about
which lamp it was, so a feed-forward policy guesses (1 in 4), while a policy with memory remembers. Recurrent
PPO (an LSTM, sb3-contrib's RecurrentPPO semantics) carries each episode's memory from turn to turn; its
exported bundle takes the memory as its `state` input and gives the next one as `next_state`, which
`evaluate` (and the browser player, for Thrust's own envs) feeds back each step. Run:

    python examples/own_env_with_memory.py
"""

from __future__ import annotations

import tempfile

import gymnasium as gym
import numpy as np

from thrust_app.interop.bundle import OnnxPolicy
from thrust_app.interop.exporter import export_run
from thrust_app.training.evaluation import evaluate
from thrust_app.training.trainer import train

LAMPS, TURNS = 4, 6


class LampRecall(gym.Env):
    """Observation: the lamps (one lit at the first turn, all dark after), then 1.0 at the last turn. Action: the
    lamp to press; only the last turn's press counts."""

    def __init__(self) -> None:
        self.observation_space = gym.spaces.Box(0.0, 1.0, (LAMPS + 1,), np.float32)
        self.action_space = gym.spaces.Discrete(LAMPS)

    def _observe(self) -> np.ndarray:
        lamps = np.eye(LAMPS)[self.lit] if self.turn == 0 else np.zeros(LAMPS)
        return np.append(lamps, float(self.turn == TURNS - 1)).astype(np.float32)

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.turn, self.lit = 0, int(self.np_random.integers(LAMPS))
        return self._observe(), {}

    def step(self, action):
        last = self.turn == TURNS - 1
        reward = float(last and action == self.lit)
        self.turn += 1
        return self._observe() if not last else np.zeros(LAMPS + 1, np.float32), reward, last, False, {}


gym.register("Examples/LampRecall-v0", entry_point=LampRecall)

#: Small and quick: 8 envs x 32 turns per rollout, 32-unit layers (and a 32-unit LSTM for recurrent PPO).
SETTINGS = {"n_envs": 8, "n_steps": 32, "batch_size": 64, "hidden": (32,), "learning_rate": 1e-3}


def main() -> None:
    with tempfile.TemporaryDirectory() as folder:
        common = dict(timesteps=16_384, eval_episodes=50, progress=False)
        flat = train("ppo", "Examples/LampRecall-v0", run_dir=f"{folder}/ppo", overrides=SETTINGS, **common)
        print(f"PPO without memory: {flat['eval_mean']:.2f} per game (guessing: {1 / LAMPS:.2f})")
        recurrent = SETTINGS | {"lstm_hidden_size": 32}
        summary = train("recurrent_ppo", "Examples/LampRecall-v0", run_dir=f"{folder}/run", overrides=recurrent, **common)
        print(f"recurrent PPO after {summary['timesteps']:,} steps: {summary['eval_mean']:.2f} per game")
        bundle = export_run(f"{folder}/run", f"{folder}/bundle")
        print("bundle inputs:", [(i["name"], i["shape"]) for i in bundle.manifest["inputs"]])
        print("bundle outputs:", [(o["name"], o["shape"]) for o in bundle.manifest["outputs"]])
        played = evaluate(OnnxPolicy(bundle), "Examples/LampRecall-v0", 50, seed=100)  # the memory carried each turn
        print(f"the bundle in onnxruntime: {played.mean:.2f} per game")


if __name__ == "__main__":
    main()
