"""Small tasks with known answers, for the test suite, the validation and examples (SB3's identity envs,
sb3-contrib's InvalidActionEnv): action masks (`ThrustTest/MaskedChoice-v0` offers them by method,
`ThrustTest/InfoMaskedChoice-v0` in info), masks and memory together (`ThrustTest/MaskedRecall-v0`), MultiDiscrete
and MultiBinary actions (`ThrustTest/Dials-v0`, `ThrustTest/BinaryDials-v0`), a Dict observation with an image
(`ThrustTest/Camera-v0`, channels last: `ThrustTest/CameraLast-v0`), a goal env for HER (`ThrustTest/PointGoal-v0`,
discrete moves: `ThrustTest/PointGoalDiscrete-v0`). Registered with gymnasium on import (Thrust's `make_env` imports
this module).
"""

from __future__ import annotations

from typing import ClassVar

import gymnasium as gym
import numpy as np

N_ACTIONS, ALLOWED, STEPS = 6, 3, 20


class MaskedChoice(gym.Env):
    """Each step shows a target action and the 3 of 6 actions allowed (the target among them): +1 for the
    target, -1 for a forbidden action, 0 otherwise; 20 steps. Random play over all actions scores about
    -6.7 an episode, random play among the allowed ones +6.7, the best policy 20. Counts forbidden picks."""

    #: forbidden actions picked, by every instance (a dict, so that a subclass shares it)
    picks: ClassVar[dict[str, int]] = {"forbidden": 0}

    def __init__(self, masks_in_info: bool = False) -> None:
        self.masks_in_info = masks_in_info
        self.observation_space = gym.spaces.Box(0.0, 1.0, (2 * N_ACTIONS,), np.float32)
        self.action_space = gym.spaces.Discrete(N_ACTIONS)

    def _draw(self) -> tuple[np.ndarray, dict]:
        self.target = int(self.np_random.integers(N_ACTIONS))
        others = self.np_random.permutation([a for a in range(N_ACTIONS) if a != self.target])[: ALLOWED - 1]
        self.mask = np.zeros(N_ACTIONS, dtype=bool)
        self.mask[[self.target, *others]] = True
        obs = np.concatenate([np.eye(N_ACTIONS)[self.target], self.mask]).astype(np.float32)
        return obs, ({"action_mask": self.mask.copy()} if self.masks_in_info else {})

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.t = 0
        return self._draw()

    def step(self, action):
        allowed = bool(self.mask[action])
        self.picks["forbidden"] += int(not allowed)
        reward = 1.0 if action == self.target else (0.0 if allowed else -1.0)
        self.t += 1
        obs, info = self._draw()
        return obs, reward, False, self.t >= STEPS, info


class MethodMasks(MaskedChoice):
    def action_masks(self) -> np.ndarray:
        return self.mask.copy()


gym.register("ThrustTest/MaskedChoice-v0", entry_point=MethodMasks)
gym.register("ThrustTest/InfoMaskedChoice-v0", entry_point=MaskedChoice, kwargs={"masks_in_info": True})


RECALL_STEPS = 10


class MaskedRecall(MethodMasks):
    """MaskedChoice whose target is shown only at the episode's first step and stays the same for its 10 steps:
    masks and memory both needed. Random play among the allowed actions scores about 3.3, a policy without
    memory at best the same (the target is one of the 3 allowed), a policy that remembers the cue 10."""

    def _draw(self) -> tuple[np.ndarray, dict]:
        if self.t == 0:
            self.target = int(self.np_random.integers(N_ACTIONS))
        others = self.np_random.permutation([a for a in range(N_ACTIONS) if a != self.target])[: ALLOWED - 1]
        self.mask = np.zeros(N_ACTIONS, dtype=bool)
        self.mask[[self.target, *others]] = True
        cue = np.eye(N_ACTIONS)[self.target] if self.t == 0 else np.zeros(N_ACTIONS)
        return np.concatenate([cue, self.mask]).astype(np.float32), {}

    def step(self, action):
        obs, reward, terminated, _, info = super().step(action)
        return obs, reward, terminated, self.t >= RECALL_STEPS, info


gym.register("ThrustTest/MaskedRecall-v0", entry_point=MaskedRecall)


TURNS = 10


class Dials(gym.Env):
    """Set each dial to the value shown: the reward is the fraction of dials right, 10 turns. Random settings
    score about 10 / values per episode, the right ones 10. `binary`: two-valued dials as MultiBinary."""

    def __init__(self, binary: bool = False) -> None:
        self.nvec = np.array([2, 2, 2, 2] if binary else [3, 4, 2])
        self.observation_space = gym.spaces.MultiBinary(4) if binary else gym.spaces.MultiDiscrete(self.nvec)
        self.action_space = gym.spaces.MultiBinary(4) if binary else gym.spaces.MultiDiscrete(self.nvec)

    def _target(self) -> np.ndarray:
        self.target = self.np_random.integers(self.nvec)
        return self.target.astype(np.int8 if isinstance(self.action_space, gym.spaces.MultiBinary) else np.int64)

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.turn = 0
        return self._target(), {}

    def step(self, action):
        reward = float(np.mean(np.asarray(action) == self.target))
        self.turn += 1
        return self._target(), reward, False, self.turn >= TURNS, {}


gym.register("ThrustTest/Dials-v0", entry_point=Dials)
gym.register("ThrustTest/BinaryDials-v0", entry_point=Dials, kwargs={"binary": True})


class Camera(gym.Env):
    """A Dict observation with an image: `camera` (3 x 10 x 10 bytes, or 10 x 10 x 3 with `channels_last`) lights
    the left or the right half, `noise` (2 floats) says nothing; pressing the lit side scores 1, 10 steps. Random
    play scores about 5, a policy that reads the image 10."""

    def __init__(self, channels_last: bool = False, size: int = 10) -> None:
        self.channels_last, self.size = channels_last, size
        shape = (size, size, 3) if channels_last else (3, size, size)
        self.observation_space = gym.spaces.Dict(
            {"camera": gym.spaces.Box(0, 255, shape, np.uint8), "noise": gym.spaces.Box(-1.0, 1.0, (2,), np.float32)}
        )
        self.action_space = gym.spaces.Discrete(2)

    def _observe(self) -> dict:
        self.side = int(self.np_random.integers(2))
        image = np.zeros((3, self.size, self.size), np.uint8)
        half = self.size // 2
        image[:, :, self.side * half : (self.side + 1) * half] = self.np_random.integers(128, 256, dtype=np.uint8)
        image = image.transpose(1, 2, 0) if self.channels_last else image
        return {"camera": image, "noise": self.np_random.uniform(-1, 1, 2).astype(np.float32)}

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.t = 0
        return self._observe(), {}

    def step(self, action):
        reward = float(action == self.side)
        self.t += 1
        return self._observe(), reward, False, self.t >= TURNS, {}


gym.register("ThrustTest/Camera-v0", entry_point=Camera)
gym.register("ThrustTest/CameraLast-v0", entry_point=Camera, kwargs={"channels_last": True})
# frames of 36 x 36 and more get SB3's NatureCNN (what an SB3 MultiInputPolicy has per image key)
gym.register("ThrustTest/Camera36-v0", entry_point=Camera, kwargs={"size": 36})
gym.register("ThrustTest/Camera36Last-v0", entry_point=Camera, kwargs={"size": 36, "channels_last": True})


class PointGoal(gym.Env):
    """A goal env (gymnasium-robotics' GoalEnv API) small enough for the test suite: a point in the square
    [-1, 1]^2 moves by 0.2 x its action towards a goal drawn in the square; the reward is
    `compute_reward(achieved, desired) = -(distance > 0.15)`, 0 within reach; episodes are cut at 15 steps and
    report `is_success`. A policy that heads straight for the goal reaches it in at most 10 steps (success 1.0);
    random steps reach it in about 3% of episodes, so without hindsight the reward is nearly always -1. With
    `discrete`, the actions are the four unit moves (right, up, left, down), for DQN."""

    DISTANCE = 0.15
    MOVES = np.array([[1, 0], [0, 1], [-1, 0], [0, -1]], dtype=np.float32)

    def __init__(self, discrete: bool = False) -> None:
        point = gym.spaces.Box(-1.0, 1.0, (2,), np.float32)
        self.observation_space = gym.spaces.Dict({"observation": point, "achieved_goal": point, "desired_goal": point})
        self.discrete = discrete
        self.action_space = gym.spaces.Discrete(4) if discrete else gym.spaces.Box(-1.0, 1.0, (2,), np.float32)

    def _obs(self) -> dict[str, np.ndarray]:
        return {"observation": self.point.copy(), "achieved_goal": self.point.copy(), "desired_goal": self.goal.copy()}

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.point = np.zeros(2, dtype=np.float32)
        self.goal = self.np_random.uniform(-1.0, 1.0, 2).astype(np.float32)
        return self._obs(), {}

    def compute_reward(self, achieved_goal, desired_goal, info) -> np.ndarray:
        """Over a batch too (HER calls it with (n, 2) arrays): 0 where the goal is within reach, else -1."""
        distance = np.linalg.norm(np.asarray(achieved_goal) - np.asarray(desired_goal), axis=-1)
        return -(distance > self.DISTANCE).astype(np.float32)

    def step(self, action):
        move = self.MOVES[int(action)] if self.discrete else np.clip(action, -1.0, 1.0)
        self.point = np.clip(self.point + 0.2 * move, -1.0, 1.0).astype(np.float32)
        reward = float(self.compute_reward(self.point, self.goal, {}))
        return self._obs(), reward, False, False, {"is_success": reward == 0.0}


gym.register("ThrustTest/PointGoal-v0", entry_point=PointGoal, max_episode_steps=15)
gym.register("ThrustTest/PointGoalDiscrete-v0", entry_point=PointGoal, max_episode_steps=15, kwargs={"discrete": True})
