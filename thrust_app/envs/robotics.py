"""gymnasium-robotics' envs (Fetch, Shadow Hand, mazes, Kitchen): registered the first time one is asked for,
with the one fix their 1.4.2 release needs to start under MuJoCo >= 3.12.

MuJoCo 3.12 and later compare an `mjtJoint` member unequal to the numpy integer `model.jnt_type` holds
(`mjJNT_HINGE == np.int32(3)` is False), so 1.4.2's `assert joint_type in (mjJNT_HINGE, mjJNT_SLIDE)` fails
on every Fetch env's reset. Gymnasium-Robotics fixed it upstream (pull request 330, not yet released); until
a release carries it, its joint helpers here see `mjtJoint`'s members as plain ints, which compare equal
both ways. Nothing else of MuJoCo or the envs changes.
"""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

#: Id prefixes gymnasium-robotics registers.
ROBOTICS_PREFIXES = ("Fetch", "HandReach", "HandManipulate", "AdroitHand", "PointMaze", "AntMaze", "FrankaKitchen")
INSTALL_HINT = 'pip install "thrust_app[robotics]" (gymnasium-robotics)'


def is_robotics(env_id: str) -> bool:
    return env_id.startswith(ROBOTICS_PREFIXES)


def register_robotics(env_id: str) -> None:
    """Register gymnasium-robotics' ids (for `env_id`, one of theirs); a missing package is one line naming it."""
    import gymnasium as gym

    try:
        import gymnasium_robotics
        from gymnasium_robotics.utils import mujoco_utils
    except ImportError:
        raise ModuleNotFoundError(f"{env_id} is a gymnasium-robotics env: {INSTALL_HINT}") from None
    gym.register_envs(gymnasium_robotics)
    if joint_types_unequal(mujoco_utils.mujoco):
        mujoco_utils.mujoco = PlainJointTypes(mujoco_utils.mujoco)


def joint_types_unequal(mujoco: Any) -> bool:
    """Whether this MuJoCo's `mjtJoint` members compare unequal to numpy integers of the same value."""
    import numpy as np

    hinge = mujoco.mjtJoint.mjJNT_HINGE
    return not hinge == np.int32(int(hinge))


class PlainJointTypes:
    """The `mujoco` module as gymnasium-robotics' joint helpers see it: everything as it is, but `mjtJoint`'s
    members plain ints."""

    def __init__(self, mujoco: Any) -> None:
        self._mujoco = mujoco
        self.mjtJoint = SimpleNamespace(**{name: int(member) for name, member in mujoco.mjtJoint.__members__.items()})

    def __getattr__(self, name: str) -> Any:
        return getattr(self._mujoco, name)
