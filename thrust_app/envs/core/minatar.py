"""MinAtar's Breakout and Space Invaders (Young & Tian, 2019; the `minatar` package 1.0.15) in plain Python.

Each game equals `minatar`'s step for step: the same 10 x 10 boards, the same rules in the same order, sticky
actions (the previous action repeats with probability 0.1), Space Invaders' difficulty ramp, and the same random
stream. `minatar` draws from numpy's legacy `RandomState(seed)`, a Mersenne Twister seeded with MT19937's
`init_genrand`; Python's `random.Random` is the same generator, so a core seeded through `seed_like_numpy`
draws the same doubles (`rand()` and `random()` both take 53 bits from two 32-bit outputs) and the same bits
(`randint(2)` takes the lowest bit of one 32-bit output). As `minatar.gym`'s v1 envs: the minimal action set,
the previous action kept across episodes, no time limit. Observations are the boards channels first
(C x H x W, 1.0 where set): what Thrust's `minatar` pipeline makes of `minatar`'s H x W x C grids.
"""

from __future__ import annotations

import random
from typing import Any

from .base import Box, CoreEnv, Discrete

SIZE = 10
STICKY_ACTION_PROB = 0.1
#: MinAtar's full action map: no-op, left, up, right, down, fire.
NOOP, LEFT, UP, RIGHT, DOWN, FIRE = range(6)


def seed_like_numpy(rng: random.Random, seed: int) -> None:
    """Put `rng` in the state numpy's `RandomState(seed)` starts from (MT19937 init_genrand)."""
    if isinstance(seed, bool) or not isinstance(seed, int) or not 0 <= seed < 2**32:
        raise TypeError(f"seed must be an int in [0, 2**32), got {seed!r}")
    state = [seed]
    for i in range(1, 624):
        state.append((1812433253 * (state[-1] ^ (state[-1] >> 30)) + i) & 0xFFFFFFFF)
    rng.setstate((3, (*state, 624), None))


def zeros() -> list[list[int]]:
    return [[0] * SIZE for _ in range(SIZE)]


class MinAtarGame(CoreEnv):
    """What both games share: seeding, sticky actions over the minimal action set, channels-first boards."""

    CHANNELS: tuple[str, ...] = ()
    #: the minimal action set, as indices of MinAtar's full action map
    ACTIONS: tuple[int, ...] = ()
    #: what a renderer draws, in order: (channel, colour); both renderers (Python, the page) read it from render_state
    LAYERS: tuple[tuple[str, str], ...] = ()

    def __init__(self) -> None:
        super().__init__()
        size = len(self.CHANNELS) * SIZE * SIZE
        self.observation_space = Box(low=(0.0,) * size, high=(1.0,) * size, shape=(len(self.CHANNELS), SIZE, SIZE))
        self.action_space = Discrete(len(self.ACTIONS))
        self.last_action = NOOP  #: kept across episodes, as minatar's Environment keeps it
        self.terminal = False

    def reset(self, seed: int | None = None) -> list[float]:
        """A new game; a seed restarts the random stream as `minatar`'s `reset(seed=...)` does."""
        if seed is not None:
            seed_like_numpy(self._rng, seed)
        return super().reset(None)

    def _reset(self, rng: random.Random) -> list[float]:
        self.new_game(rng)
        return self._obs()

    def _step(self, action: int) -> tuple[list[float], float, bool, bool]:
        chosen = self.ACTIONS[action]
        if self._rng.random() < STICKY_ACTION_PROB:  # numpy's rand() < sticky_action_prob
            chosen = self.last_action
        self.last_action = chosen
        reward = float(self.act(chosen))
        return self._obs(), reward, self.terminal, False

    def _obs(self) -> list[float]:
        return [float(cell) for board in self.boards() for row in board for cell in row]

    def render_state(self) -> dict[str, Any]:
        """The board as coloured layers, drawn in order (later ones on top)."""
        boards = dict(zip(self.CHANNELS, self.boards(), strict=True))
        layers = [{"channel": name, "color": color, "board": boards[name]} for name, color in self.LAYERS]
        return {"size": SIZE, "layers": layers, "terminal": self.terminal}

    def new_game(self, rng: random.Random) -> None:
        raise NotImplementedError

    def act(self, action: int) -> int:
        raise NotImplementedError

    def boards(self) -> list[list[list[int]]]:
        """One 10 x 10 board per channel, 1 where the channel is set."""
        raise NotImplementedError


class MinAtarBreakout(MinAtarGame):
    """Bounce the ball off the paddle into three rows of bricks (+1 a brick; a new wall once all are gone); the
    game ends when the ball passes the paddle. The ball moves along diagonals; a trail marks where it was."""

    id = "thrust/MinAtarBreakout-v0"
    CHANNELS = ("paddle", "ball", "trail", "brick")
    ACTIONS = (NOOP, LEFT, RIGHT)
    LAYERS = (("brick", "#ea4335"), ("trail", "#c8c8c4"), ("ball", "#4285f4"), ("paddle", "#282c34"))

    def new_game(self, rng: random.Random) -> None:
        self.ball_y = 3
        self.ball_x, self.ball_dir = ((0, 2), (9, 3))[rng.getrandbits(32) & 1]  # numpy's randint(2)
        self.pos = 4
        self.bricks = [[1] * SIZE if 1 <= row <= 3 else [0] * SIZE for row in range(SIZE)]
        self.strike = False
        self.last_x, self.last_y = self.ball_x, self.ball_y
        self.terminal = False

    def act(self, action: int) -> int:
        if self.terminal:
            return 0
        reward = 0
        if action == LEFT:
            self.pos = max(0, self.pos - 1)
        elif action == RIGHT:
            self.pos = min(9, self.pos + 1)
        self.last_x, self.last_y = self.ball_x, self.ball_y
        dx, dy = ((-1, -1), (1, -1), (1, 1), (-1, 1))[self.ball_dir]  # directions 0-3: up-left, up-right, ...
        new_x, new_y = self.ball_x + dx, self.ball_y + dy
        strike_toggle = False
        if new_x < 0 or new_x > 9:  # a side wall: bounce sideways
            new_x = min(max(new_x, 0), 9)
            self.ball_dir = (1, 0, 3, 2)[self.ball_dir]
        if new_y < 0:  # the ceiling
            new_y = 0
            self.ball_dir = (3, 2, 1, 0)[self.ball_dir]
        elif self.bricks[new_y][new_x] == 1:
            strike_toggle = True
            if not self.strike:
                reward += 1
                self.strike = True
                self.bricks[new_y][new_x] = 0
                new_y = self.last_y
                self.ball_dir = (3, 2, 1, 0)[self.ball_dir]
        elif new_y == 9:  # the paddle's row
            if not any(any(row) for row in self.bricks):
                self.bricks = [[1] * SIZE if 1 <= row <= 3 else [0] * SIZE for row in range(SIZE)]
            if self.ball_x == self.pos:
                self.ball_dir = (3, 2, 1, 0)[self.ball_dir]
                new_y = self.last_y
            elif new_x == self.pos:
                self.ball_dir = (2, 3, 0, 1)[self.ball_dir]
                new_y = self.last_y
            else:
                self.terminal = True
        if not strike_toggle:
            self.strike = False
        self.ball_x, self.ball_y = new_x, new_y
        return reward

    def boards(self) -> list[list[list[int]]]:
        paddle, ball, trail = zeros(), zeros(), zeros()
        paddle[9][self.pos] = 1
        ball[self.ball_y][self.ball_x] = 1
        trail[self.last_y][self.last_x] = 1
        return [paddle, ball, trail, [list(row) for row in self.bricks]]


class MinAtarSpaceInvaders(MinAtarGame):
    """Shoot the aliens (+1 each) before they reach the cannon's row or hit it; they shoot back at the cannon from
    the nearest column, move faster as they thin out, and come again, faster (the difficulty ramp), when all
    are gone. Fire reloads in 5 steps."""

    id = "thrust/MinAtarSpaceInvaders-v0"
    CHANNELS = ("cannon", "alien", "alien_left", "alien_right", "friendly_bullet", "enemy_bullet")
    ACTIONS = (NOOP, LEFT, RIGHT, FIRE)
    LAYERS = (("alien", "#34a853"), ("friendly_bullet", "#4285f4"), ("enemy_bullet", "#ea4335"), ("cannon", "#282c34"))
    SHOT_COOL_DOWN, ENEMY_MOVE_INTERVAL, ENEMY_SHOT_INTERVAL = 5, 12, 10

    def new_game(self, rng: random.Random) -> None:
        self.pos = 5
        self.f_bullets, self.e_bullets = zeros(), zeros()
        self.aliens = self.new_wave()
        self.alien_dir = -1
        self.enemy_move_interval = self.ENEMY_MOVE_INTERVAL
        self.alien_move_timer = self.enemy_move_interval
        self.alien_shot_timer = self.ENEMY_SHOT_INTERVAL
        self.ramp_index = 0
        self.shot_timer = 0
        self.terminal = False

    @staticmethod
    def new_wave() -> list[list[int]]:
        return [[1 if row < 4 and 2 <= col < 8 else 0 for col in range(SIZE)] for row in range(SIZE)]

    def act(self, action: int) -> int:
        if self.terminal:
            return 0
        if action == FIRE and self.shot_timer == 0:
            self.f_bullets[9][self.pos] = 1
            self.shot_timer = self.SHOT_COOL_DOWN
        elif action == LEFT:
            self.pos = max(0, self.pos - 1)
        elif action == RIGHT:
            self.pos = min(9, self.pos + 1)
        self.f_bullets = [*self.f_bullets[1:], [0] * SIZE]  # up one row; the top row leaves
        self.e_bullets = [[0] * SIZE, *self.e_bullets[:-1]]  # down one row; the bottom row leaves
        self.terminal |= self.e_bullets[9][self.pos] == 1 or self.aliens[9][self.pos] == 1
        if self.alien_move_timer == 0:
            self.move_aliens()
        if self.alien_shot_timer == 0:
            self.alien_shot_timer = self.ENEMY_SHOT_INTERVAL
            row, col = self.nearest_alien()
            self.e_bullets[row][col] = 1
        reward = 0
        for row in range(SIZE):  # a friendly bullet on an alien: both go
            for col in range(SIZE):
                if self.aliens[row][col] and self.f_bullets[row][col]:
                    reward += 1
                    self.aliens[row][col] = self.f_bullets[row][col] = 0
        self.shot_timer -= self.shot_timer > 0
        self.alien_move_timer -= 1
        self.alien_shot_timer -= 1
        if not any(any(row) for row in self.aliens):  # a new wave, faster (down to an interval of 6)
            if self.enemy_move_interval > 6:
                self.enemy_move_interval -= 1
                self.ramp_index += 1
            self.aliens = self.new_wave()
        return reward

    def move_aliens(self) -> None:
        """Sideways, or down a row and turning at an edge; they move again after as many steps as are left of
        them, at most the wave's interval."""
        self.alien_move_timer = min(sum(map(sum, self.aliens)), self.enemy_move_interval)
        at_edge = any(row[0] for row in self.aliens) if self.alien_dir < 0 else any(row[9] for row in self.aliens)
        if at_edge:
            self.alien_dir = -self.alien_dir
            self.terminal |= any(self.aliens[9])
            self.aliens = [self.aliens[9], *self.aliens[:9]]  # numpy's roll: the bottom row wraps to the top
        else:
            self.aliens = [[row[(col - self.alien_dir) % SIZE] for col in range(SIZE)] for row in self.aliens]
        self.terminal |= self.aliens[9][self.pos] == 1

    def nearest_alien(self) -> tuple[int, int]:
        """The lowest alien of the column nearest the cannon (ties: the left one)."""
        for col in sorted(range(SIZE), key=lambda c: abs(c - self.pos)):
            rows = [row for row in range(SIZE) if self.aliens[row][col]]
            if rows:
                return max(rows), col
        raise AssertionError("a wave always has aliens")

    def boards(self) -> list[list[list[int]]]:
        cannon = zeros()
        cannon[9][self.pos] = 1
        aliens = [list(row) for row in self.aliens]
        empty = zeros()
        left, right = (aliens, empty) if self.alien_dir < 0 else (empty, aliens)
        return [cannon, aliens, left, right, [list(r) for r in self.f_bullets], [list(r) for r in self.e_bullets]]
