"""gymnasium's MuJoCo locomotion envs (HalfCheetah, Hopper, Walker2d, Swimmer; v5, default settings) as a core
over a physics engine it is given.

The physics (MuJoCo itself) is not Python: on the desktop it is the `mujoco` package
(`thrust_app/envs/mujoco_physics.py`), in the browser DeepMind's `mujoco-js` wasm module (`web/src/mujoco.js`).
What gymnasium adds on top of the physics, the observation, the reward, the termination, the reset noise and the
time limit, is written here once, standard library only, so the browser runs this same source under Pyodide.
tests/envs/test_locomotion.py holds it equal to gymnasium's own envs step for step.

A physics object has `nq`, `nv`, `timestep`, `ctrl_range()` (one [low, high] per actuator), `reset()`
(mj_resetData), `state()` ([qpos, qvel]), `set_state(qpos, qvel)` (and mj_forward), `step(ctrl, n)` (n mj_steps
under that control) and `geoms()` (what a drawing needs, see `GEOM_FIELDS`).
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass
from typing import Any

from .base import Box, CoreEnv

#: What `physics.geoms()` gives per geom, in this order: MuJoCo's geom type (0 plane, 2 sphere, 3 capsule, ...),
#: its radius and half-length (geom_size[0:2]), its centre (geom_xpos) and its axis (geom_xmat's third column).
GEOM_FIELDS = ("type", "radius", "half_length", "x", "y", "z", "axis_x", "axis_y", "axis_z")


@dataclass(frozen=True)
class LocomotionTask:
    """One env's settings, gymnasium's v5 defaults: its XML and frame skip, what it observes, rewards and ends on."""

    env_id: str
    xml_file: str
    frame_skip: int
    ctrl_cost_weight: float
    reset_noise_scale: float
    #: the start velocities' noise: "uniform" in +-scale, or "normal" (scale * N(0, 1), HalfCheetah's)
    velocity_noise: str = "uniform"
    #: leading qpos entries left out of the observation (the root's x; Swimmer's x and y)
    skipped_qpos: int = 1
    #: observed velocities clipped to +-this (Hopper's, Walker2d's), or None
    clip_qvel: float | None = None
    healthy_reward: float = 0.0
    #: healthy while low < qpos[1] < high (the torso's height) and low < qpos[2] < high (its angle); None: always
    healthy_z: tuple[float, float] | None = None
    healthy_angle: tuple[float, float] | None = None
    #: and while every entry of (qpos[2:], qvel) lies strictly inside this range (Hopper's), or None
    healthy_state: tuple[float, float] | None = None
    forward_reward_weight: float = 1.0
    max_episode_steps: int = 1000
    #: the plane the player draws: "side" (x, z) for walkers, "top" (x, y) for the swimmer
    view: str = "side"

    def observation(self, qpos: list[float], qvel: list[float]) -> list[float]:
        """qpos without the skipped root coordinates, then qvel (clipped where the env clips it)."""
        velocity = qvel if self.clip_qvel is None else [min(max(v, -self.clip_qvel), self.clip_qvel) for v in qvel]
        return qpos[self.skipped_qpos :] + velocity

    def is_healthy(self, qpos: list[float], qvel: list[float]) -> bool:
        def inside(value: float, bounds: tuple[float, float] | None) -> bool:
            return bounds is None or bounds[0] < value < bounds[1]

        state_ok = self.healthy_state is None or all(inside(v, self.healthy_state) for v in qpos[2:] + qvel)
        return state_ok and inside(qpos[1], self.healthy_z) and inside(qpos[2], self.healthy_angle)

    def reward(self, x_velocity: float, action: list[float], healthy: bool) -> float:
        """forward_weight * dx/dt + healthy_reward * [healthy] - ctrl_cost_weight * sum(a^2)."""
        control_cost = 0.0
        for a in action:  # in order, as numpy sums a vector this short
            control_cost += a * a
        survive = self.healthy_reward if healthy else 0.0
        return self.forward_reward_weight * x_velocity + survive - self.ctrl_cost_weight * control_cost

    def start_state(self, qpos0: list[float], qvel0: list[float], rng: random.Random) -> tuple[list[float], list[float]]:
        """The reset state: qpos0 + U(-scale, scale), qvel0 + the velocity noise. The same distributions as
        gymnasium's reset; the draws come from the core's `random.Random`, not numpy's generator."""
        scale = self.reset_noise_scale
        qpos = [q + rng.uniform(-scale, scale) for q in qpos0]
        if self.velocity_noise == "normal":
            qvel = [v + scale * rng.gauss(0.0, 1.0) for v in qvel0]
        else:
            qvel = [v + rng.uniform(-scale, scale) for v in qvel0]
        return qpos, qvel


_WALKER = {"ctrl_cost_weight": 1e-3, "reset_noise_scale": 5e-3, "clip_qvel": 10.0, "healthy_reward": 1.0}

#: The envs, by gymnasium id.
LOCOMOTION_TASKS: dict[str, LocomotionTask] = {
    task.env_id: task
    for task in (
        LocomotionTask("HalfCheetah-v5", "half_cheetah.xml", 5, ctrl_cost_weight=0.1, reset_noise_scale=0.1,
                       velocity_noise="normal"),
        LocomotionTask("Hopper-v5", "hopper.xml", 4, healthy_z=(0.7, math.inf), healthy_angle=(-0.2, 0.2),
                       healthy_state=(-100.0, 100.0), **_WALKER),
        LocomotionTask("Walker2d-v5", "walker2d_v5.xml", 4, healthy_z=(0.8, 2.0), healthy_angle=(-1.0, 1.0), **_WALKER),
        LocomotionTask("Swimmer-v5", "swimmer.xml", 4, ctrl_cost_weight=1e-4, reset_noise_scale=0.1, skipped_qpos=2,
                       view="top"),
    )
}  # fmt: skip


class LocomotionCore(CoreEnv):
    """A LocomotionTask on a physics engine: reset, step and the 1,000-step limit as gymnasium's env does them."""

    def __init__(self, task: LocomotionTask, physics: Any) -> None:
        super().__init__()
        self.task, self.physics = task, physics
        self.id = task.env_id
        self.max_episode_steps = task.max_episode_steps
        self.dt = physics.timestep * task.frame_skip  # gymnasium's MujocoEnv.dt
        ranges = [[float(bound) for bound in pair] for pair in physics.ctrl_range()]
        self.action_space = Box(low=tuple(r[0] for r in ranges), high=tuple(r[1] for r in ranges), shape=(len(ranges),))
        size = physics.nq - task.skipped_qpos + physics.nv
        self.observation_space = Box(low=(-math.inf,) * size, high=(math.inf,) * size, shape=(size,), dtype="float64")
        self.last_action = [0.0] * len(ranges)

    def _state(self) -> tuple[list[float], list[float]]:
        qpos, qvel = self.physics.state()
        return [float(q) for q in qpos], [float(v) for v in qvel]

    def _reset(self, rng: random.Random) -> list[float]:
        self.physics.reset()
        qpos, qvel = self.task.start_state(*self._state(), rng)
        self.physics.set_state(qpos, qvel)
        self.last_action = [0.0] * self.action_space.size
        return self.task.observation(*self._state())

    def _step(self, action: list[float]) -> tuple[list[float], float, bool, bool]:
        x_before = self._state()[0][0]
        self.physics.step(action, self.task.frame_skip)
        qpos, qvel = self._state()
        healthy = self.task.is_healthy(qpos, qvel)
        reward = self.task.reward((qpos[0] - x_before) / self.dt, action, healthy)
        self.last_action = action
        return self.task.observation(qpos, qvel), reward, not healthy, False

    def render_state(self) -> dict[str, Any]:
        geoms = [dict(zip(GEOM_FIELDS, geom, strict=True)) for geom in self.physics.geoms()]
        return {"view": self.task.view, "root_x": self._state()[0][0], "geoms": geoms, "action": self.last_action}
