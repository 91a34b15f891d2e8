"""RGB frames of the Thrust envs from their cores' `render_state()`, drawn with numpy only.

Used by gymnasium's `render_mode="rgb_array"` and the dashboard's "watch a policy". The browser
player draws the same render state on a canvas.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

BACKGROUND = (250, 250, 247)
INK = (40, 44, 52)
ACCENT = (66, 133, 244)
GOOD = (52, 168, 83)
BAD = (219, 68, 55)
FOOD = (234, 67, 53)
MUTED = (200, 200, 196)


def _canvas(width: int, height: int) -> np.ndarray:
    frame = np.empty((height, width, 3), dtype=np.uint8)
    frame[:] = BACKGROUND
    return frame


def _rect(frame: np.ndarray, x0: float, y0: float, x1: float, y1: float, color: tuple[int, int, int]) -> None:
    h, w, _ = frame.shape
    xa, xb = sorted((round(x0), round(x1)))
    ya, yb = sorted((round(y0), round(y1)))
    frame[max(ya, 0) : min(yb, h), max(xa, 0) : min(xb, w)] = color


def _window(frame: np.ndarray, x0: float, y0: float, x1: float, y1: float, margin: float):
    """The frame's pixels in a shape's bounding box (plus `margin`), and their coordinates: a shape's
    arithmetic then covers its box, not the whole frame."""
    h, w, _ = frame.shape
    xa, xb = max(math.floor(min(x0, x1) - margin), 0), min(math.ceil(max(x0, x1) + margin) + 1, w)
    ya, yb = max(math.floor(min(y0, y1) - margin), 0), min(math.ceil(max(y0, y1) + margin) + 1, h)
    ys, xs = np.ogrid[ya:yb, xa:xb]
    return frame[ya:yb, xa:xb], xs, ys


def _disc(frame: np.ndarray, cx: float, cy: float, r: float, color: tuple[int, int, int]) -> None:
    window, xs, ys = _window(frame, cx, cy, cx, cy, r)
    window[(xs - cx) ** 2 + (ys - cy) ** 2 <= r * r] = color


def _segment(frame: np.ndarray, x0: float, y0: float, x1: float, y1: float, width: float, color: tuple[int, int, int]) -> None:
    window, xs, ys = _window(frame, x0, y0, x1, y1, width / 2)
    dx, dy = x1 - x0, y1 - y0
    length2 = dx * dx + dy * dy or 1.0
    t = np.clip(((xs - x0) * dx + (ys - y0) * dy) / length2, 0.0, 1.0)  # the nearest point of the segment
    dist2 = (xs - (x0 + t * dx)) ** 2 + (ys - (y0 + t * dy)) ** 2
    window[dist2 <= (width / 2) ** 2] = color


def render_cartpole(state: dict[str, Any], width: int = 600, height: int = 400) -> np.ndarray:
    frame = _canvas(width, height)
    scale = width / (2 * state["x_limit"] * 1.25)
    track_y = height * 0.7
    _rect(frame, 0, track_y, width, track_y + 2, INK)
    cx = width / 2 + state["x"] * scale
    _rect(frame, cx - 30, track_y - 18, cx + 30, track_y + 12, INK)
    pole = state["pole_length"] * scale
    tip_x, tip_y = cx + pole * math.sin(state["theta"]), track_y - 18 - pole * math.cos(state["theta"])
    _segment(frame, cx, track_y - 18, tip_x, tip_y, 10, ACCENT)
    _disc(frame, cx, track_y - 18, 5, MUTED)
    return frame


def render_pendulum(state: dict[str, Any], size: int = 400) -> np.ndarray:
    frame = _canvas(size, size)
    centre = size / 2
    length = size * 0.38
    theta = state["theta"]
    _segment(frame, centre, centre, centre + length * math.sin(theta), centre - length * math.cos(theta), 16, BAD)
    _disc(frame, centre, centre, 8, INK)
    torque = state.get("torque") or 0.0
    bar = torque / state["max_torque"] * size * 0.4
    _rect(frame, centre, size - 24, centre + bar, size - 12, ACCENT)
    return frame


def render_snake(state: dict[str, Any], cell: int = 24) -> np.ndarray:
    rows, cols = state["height"], state["width"]
    frame = _canvas(cols * cell, rows * cell)
    for r in range(rows):
        for c in range(cols):
            if (r + c) % 2:
                _rect(frame, c * cell, r * cell, (c + 1) * cell, (r + 1) * cell, (240, 240, 236))
    if state["food"] is not None:
        fr, fc = state["food"]
        _disc(frame, (fc + 0.5) * cell, (fr + 0.5) * cell, cell * 0.35, FOOD)
    for i, (r, c) in enumerate(state["body"]):
        color = (BAD if state["dead"] else INK) if i == 0 else GOOD
        _rect(frame, c * cell + 2, r * cell + 2, (c + 1) * cell - 2, (r + 1) * cell - 2, color)
    return frame


def render_bandit(state: dict[str, Any], width: int = 400, height: int = 300) -> np.ndarray:
    frame = _canvas(width, height)
    _rect(frame, 0, 0, width, 40, ACCENT if state["context"] else MUTED)
    for lever in (0, 1):
        x = width * (0.3 + 0.4 * lever)
        pulled = state["last_action"] == lever
        color = (GOOD if state["last_reward"] else BAD) if pulled else INK
        top = 110 if pulled else 80
        _segment(frame, x, 240, x, top, 10, color)
        _disc(frame, x, top, 16, color)
        _rect(frame, x - 40, 240, x + 40, 260, INK)
    return frame


def render_mountain_car(state: dict[str, Any], width: int = 400, height: int = 300) -> np.ndarray:
    """The valley (height sin(3x) * 0.45 + 0.55 over x in [-1.2, 0.6]), the flag at the goal, the car, and its push:
    green to the right, red to the left."""
    frame = _canvas(width, height)
    to_x = lambda x: (x + 1.2) / 1.8 * (width - 40) + 20  # noqa: E731
    to_y = lambda h: height - 30 - h * (height - 80)  # noqa: E731
    xs = np.linspace(-1.2, 0.6, 60)
    ys = np.sin(3 * xs) * 0.45 + 0.55
    for x0, y0, x1, y1 in zip(xs[:-1], ys[:-1], xs[1:], ys[1:], strict=True):
        _segment(frame, to_x(x0), to_y(y0), to_x(x1), to_y(y1), 3, INK)
    goal_x, goal_y = to_x(state["goal"]), to_y(math.sin(3 * state["goal"]) * 0.45 + 0.55)
    _rect(frame, goal_x, goal_y - 40, goal_x + 2, goal_y, INK)
    _rect(frame, goal_x + 2, goal_y - 40, goal_x + 22, goal_y - 28, ACCENT)
    car_x, car_y = to_x(state["position"]), to_y(state["height"]) - 10
    _disc(frame, car_x, car_y, 10, INK)
    if state["push"]:
        _segment(frame, car_x, car_y, car_x + 30 * state["push"], car_y, 4, GOOD if state["push"] > 0 else BAD)
    return frame


def render_acrobot(state: dict[str, Any], width: int = 400, height: int = 300) -> np.ndarray:
    """The two links from the pivot (angles from straight down; the second relative to the first), the target
    height one link above the pivot, and the torque at the joint: green one way, red the other."""
    frame = _canvas(width, height)
    scale, pivot_x, pivot_y = height / 5.0, width / 2, height / 2
    joint = (pivot_x + scale * math.sin(state["theta1"]), pivot_y + scale * math.cos(state["theta1"]))
    angle = state["theta1"] + state["theta2"]
    tip = (joint[0] + scale * math.sin(angle), joint[1] + scale * math.cos(angle))
    _segment(frame, 20, pivot_y - scale, width - 20, pivot_y - scale, 1, INK)
    _segment(frame, pivot_x, pivot_y, joint[0], joint[1], 8, ACCENT)
    _segment(frame, joint[0], joint[1], tip[0], tip[1], 8, ACCENT)
    _disc(frame, pivot_x, pivot_y, 5, INK)
    _disc(frame, joint[0], joint[1], 6, GOOD if state["torque"] > 0 else BAD if state["torque"] < 0 else INK)
    return frame


def render_cards(state: dict[str, Any], width: int = 400, height: int = 300) -> np.ndarray:
    """Six cards: those in hand dark, the others faded; the target's top in blue; the card just played marked
    underneath, green for the target, red for a forbidden one."""
    frame = _canvas(width, height)
    slot = width / len(state["hand"])
    for card, held in enumerate(state["hand"]):
        x0, x1 = card * slot + 8, (card + 1) * slot - 8
        _rect(frame, x0, 90, x1, 210, INK if held else MUTED)
        if card == state["target"]:
            _rect(frame, x0, 90, x1, 110, ACCENT)
        if card == state["last_action"]:
            _rect(frame, x0, 225, x1, 240, GOOD if state["last_reward"] == 1.0 else BAD if state["last_reward"] < 0 else MUTED)
    return frame


def render_minatar(state: dict[str, Any], cell: int = 24) -> np.ndarray:
    """A MinAtar board: each layer's cells in its colour, later layers on top (the core says which and how)."""
    size = state["size"]
    frame = _canvas(size * cell, size * cell)
    for layer in state["layers"]:
        color = tuple(int(layer["color"][i : i + 2], 16) for i in (1, 3, 5))
        for r, row in enumerate(layer["board"]):
            for c, on in enumerate(row):
                if on:
                    _rect(frame, c * cell + 1, r * cell + 1, (c + 1) * cell - 1, (r + 1) * cell - 1, color)
    return frame


_RENDERERS = {
    "thrust/Bandit-v0": render_bandit,
    "thrust/CartPole-v0": render_cartpole,
    "thrust/Pendulum-v0": render_pendulum,
    "thrust/Snake-v0": render_snake,
    "thrust/CartPoleNoVel-v0": render_cartpole,
    "thrust/PendulumNoVel-v0": render_pendulum,
    "thrust/Cards-v0": render_cards,
    "thrust/MountainCar-v0": render_mountain_car,
    "thrust/MountainCarContinuous-v0": render_mountain_car,
    "thrust/Acrobot-v0": render_acrobot,
    "thrust/MinAtarBreakout-v0": render_minatar,
    "thrust/MinAtarSpaceInvaders-v0": render_minatar,
}


def render_rgb(env_id: str, state: dict[str, Any]) -> np.ndarray:
    """An (H, W, 3) uint8 frame of a Thrust env's render state."""
    return _RENDERERS[env_id](state)
