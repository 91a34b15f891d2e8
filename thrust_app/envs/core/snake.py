"""Snake on a grid, observed as an image for a CNN policy.

The observation is `3 x H x W` (channels: head, body, food; 1.0 where present). Actions are
relative to the snake's heading: 0 = straight on, 1 = turn left, 2 = turn right, so no action is
ever illegal. Eating food pays +1 and grows the snake; hitting a wall or itself pays -1 and ends
the episode (terminated). Going `starve_steps` steps without food ends it too (truncated, no
penalty), so every episode ends. Filling the board is a win: +1 and terminated.
"""

from __future__ import annotations

import random
from typing import Any

from .base import Box, CoreEnv, Discrete

#: Headings as (row, col) deltas, clockwise from up: turning right is +1, left is -1.
HEADINGS = ((-1, 0), (0, 1), (1, 0), (0, -1))
STRAIGHT, LEFT, RIGHT = 0, 1, 2
CHANNELS = ("head", "body", "food")


class Snake(CoreEnv):
    """Snake on a `height x width` grid (default 10 x 10)."""

    id = "thrust/Snake-v0"
    action_space = Discrete(3)

    def __init__(self, width: int = 10, height: int = 10, starve_steps: int | None = None) -> None:
        super().__init__()
        if width < 5 or height < 5:
            raise ValueError(f"Snake needs a grid of at least 5 x 5, got {width} x {height}")
        self.width = width
        self.height = height
        self.starve_steps = starve_steps if starve_steps is not None else width * height
        if self.starve_steps < 1:
            raise ValueError(f"starve_steps must be >= 1, got {self.starve_steps}")
        size = len(CHANNELS) * height * width
        self.observation_space = Box(low=(0.0,) * size, high=(1.0,) * size, shape=(len(CHANNELS), height, width))
        self.body: list[tuple[int, int]] = []  # head first
        self.heading = 1
        self.food: tuple[int, int] | None = None
        self.steps_since_food = 0
        self.score = 0
        self.dead = False

    def _reset(self, rng: random.Random) -> list[float]:
        row, col = self.height // 2, self.width // 2
        self.body = [(row, col), (row, col - 1), (row, col - 2)]
        self.heading = 1
        self.steps_since_food = 0
        self.score = 0
        self.dead = False
        self.food = self._place_food(rng)
        return self._obs()

    def _place_food(self, rng: random.Random) -> tuple[int, int] | None:
        occupied = set(self.body)
        free = [(r, c) for r in range(self.height) for c in range(self.width) if (r, c) not in occupied]
        return rng.choice(free) if free else None

    def _step(self, action: int) -> tuple[list[float], float, bool, bool]:
        if action == LEFT:
            self.heading = (self.heading - 1) % 4
        elif action == RIGHT:
            self.heading = (self.heading + 1) % 4
        dr, dc = HEADINGS[self.heading]
        head = (self.body[0][0] + dr, self.body[0][1] + dc)
        eats = head == self.food
        # The tail leaves its cell in the same step unless the snake grows, so moving into it is safe.
        body_after = self.body if eats else self.body[:-1]
        off_grid = not (0 <= head[0] < self.height and 0 <= head[1] < self.width)
        if off_grid or head in body_after:
            self.dead = True
            return self._obs(), -1.0, True, False
        self.body = [head, *body_after]
        if eats:
            self.score += 1
            self.steps_since_food = 0
            self.food = self._place_food(self._rng)
            return self._obs(), 1.0, self.food is None, False
        self.steps_since_food += 1
        return self._obs(), 0.0, False, self.steps_since_food >= self.starve_steps

    def _obs(self) -> list[float]:
        h, w = self.height, self.width
        grid = [0.0] * (len(CHANNELS) * h * w)
        head_r, head_c = self.body[0]
        grid[head_r * w + head_c] = 1.0
        for r, c in self.body[1:]:
            grid[h * w + r * w + c] = 1.0
        if self.food is not None:
            grid[2 * h * w + self.food[0] * w + self.food[1]] = 1.0
        return grid

    def render_state(self) -> dict[str, Any]:
        return {
            "width": self.width,
            "height": self.height,
            "body": [list(cell) for cell in self.body],
            "food": list(self.food) if self.food else None,
            "heading": self.heading,
            "score": self.score,
            "dead": self.dead,
        }
