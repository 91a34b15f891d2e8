"""The desktop's physics for the locomotion core: the `mujoco` package on gymnasium's own XML.

`make_locomotion_core("HalfCheetah-v5")` is the same env the browser player runs (thrust_app/envs/core/locomotion.py
over `mujoco-js`), here over MuJoCo's Python bindings: Python's reference for the player's MuJoCo episodes.
The XML files are read from the installed gymnasium, which ships them (`gymnasium/envs/mujoco/assets/`).
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

from .core import LOCOMOTION_TASKS, EnvError, LocomotionCore, locomotion_core


def gymnasium_xml(xml_file: str) -> Path:
    """The path of one of gymnasium's MuJoCo XML files, found without importing gymnasium's MuJoCo envs."""
    spec = importlib.util.find_spec("gymnasium")
    if spec is None or not spec.submodule_search_locations:
        raise EnvError("gymnasium is not installed; `pip install gymnasium` gives the MuJoCo XML files")
    path = Path(spec.submodule_search_locations[0]) / "envs" / "mujoco" / "assets" / xml_file
    if not path.is_file():
        raise EnvError(f"{path} is missing from the installed gymnasium; reinstall gymnasium")
    return path


class MujocoPhysics:
    """One MjModel/MjData pair with the few calls the locomotion core makes."""

    def __init__(self, xml_path: Path) -> None:
        try:
            import mujoco
        except ImportError:
            raise EnvError("MuJoCo envs need the mujoco package: pip install -e '.[mujoco]'") from None
        self._mujoco = mujoco
        self.model = mujoco.MjModel.from_xml_path(str(xml_path))
        self.data = mujoco.MjData(self.model)
        self.nq, self.nv, self.timestep = self.model.nq, self.model.nv, float(self.model.opt.timestep)

    def ctrl_range(self) -> list[list[float]]:
        return self.model.actuator_ctrlrange.tolist()

    def reset(self) -> None:
        self._mujoco.mj_resetData(self.model, self.data)

    def state(self) -> list[list[float]]:
        return [self.data.qpos.tolist(), self.data.qvel.tolist()]

    def set_state(self, qpos: list[float], qvel: list[float]) -> None:
        self.data.qpos[:] = qpos
        self.data.qvel[:] = qvel
        self._mujoco.mj_forward(self.model, self.data)

    def step(self, ctrl: list[float], n: int) -> None:
        self.data.ctrl[:] = ctrl
        self._mujoco.mj_step(self.model, self.data, nstep=n)

    def geoms(self) -> list[list[float]]:
        model, data = self.model, self.data
        return [
            [int(model.geom_type[g]), *model.geom_size[g, :2].tolist(), *data.geom_xpos[g].tolist(),
             *data.geom_xmat[g, 2::3].tolist()]
            for g in range(model.ngeom)
        ]  # fmt: skip


def make_locomotion_core(env_id: str) -> LocomotionCore:
    """gymnasium's `env_id` (HalfCheetah-v5, Hopper-v5, Walker2d-v5, Swimmer-v5) as a core on the desktop's MuJoCo."""
    if env_id not in LOCOMOTION_TASKS:
        raise EnvError(f"{env_id} is not a locomotion env the player runs; those are: {', '.join(LOCOMOTION_TASKS)}")
    return locomotion_core(env_id, MujocoPhysics(gymnasium_xml(LOCOMOTION_TASKS[env_id].xml_file)))
