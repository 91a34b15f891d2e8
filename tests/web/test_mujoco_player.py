"""MuJoCo in the tab: a bundle for one of gymnasium's robots plays in the player on MuJoCo's wasm build (npm
`mujoco-js`) under the locomotion core, as Python's episode on the `mujoco` package plays it."""

from __future__ import annotations

import numpy as np
import pytest

from thrust_app.envs.mujoco_physics import make_locomotion_core
from thrust_app.interop.exporter import export_run
from thrust_app.interop.playback import onnx_episode
from thrust_app.training.trainer import train
from thrust_app.web.browser import player_page
from thrust_app.web.server import PlayerServer

from .test_player import needs_browser  # one definition: Chromium and web/node_modules present

#: Each robot, the algorithm its bundle is trained with, and how many of its steps the tab and Python agree on to
#: float tolerance (None: all). Measured here: early policies' HalfCheetah and Walker2d agree over whole episodes
#: (observations within 1.5e-6, actions within 2.4e-7: onnxruntime-web's and onnxruntime's float32 products differ in
#: the last bit, and the same actions give the same physics to 1.4e-9); a trained runner's gallop is chaotic and
#: parts after 8-26 steps (the reference bundle, tests/web/test_player.py). The Hopper parts ways at its foot's
#: first floor contact (env step 8): MuJoCo changed its Hopper in 3.5.0 (Python's 3.3.7 and 3.4.0 equal the wasm
#: build's 3.3.8 to 7e-15; 3.5.0 to 3.17.0 and 4.0.1 do not), so the tab's Hopper is MuJoCo 3.3.8's.
ROBOTS = [("HalfCheetah-v5", "sac", None), ("Walker2d-v5", "td3", None), ("Hopper-v5", "td3", 7)]


@pytest.fixture(scope="module")
def robot_bundles(tmp_path_factory):
    """Each robot's bundle, trained a few hundred steps (an early policy shows parity as well as a good one)."""
    export = tmp_path_factory.mktemp("export")
    for env_id, algo, _ in ROBOTS:
        run = export.parent / f"run-{env_id}"
        overrides = {"learning_starts": 100, "hidden": (64, 64)}
        train(algo, env_id, timesteps=300, seed=0, run_dir=run, overrides=overrides, progress=False, log=lambda _: None)
        export_run(run, export / env_id)
    return export


@needs_browser
@pytest.mark.parametrize("env_id, algo, agreeing", ROBOTS)
def test_a_robot_plays_in_the_tab_as_in_python(robot_bundles, env_id, algo, agreeing):
    with PlayerServer(port=0, export_dir=robot_bundles) as server, player_page(server.url) as page:
        request = {"bundle": env_id, "seed": 3, "ep": "wasm", "observations": True}
        got = page.evaluate("(a) => window.thrustPlayer.runEpisode(a)", request)
        version = page.evaluate("window.thrustPlayer.mujocoVersion")
        fetched = [r for r in page.requests if "mujoco" in r]
    want = onnx_episode(robot_bundles / env_id, 3)
    assert version.startswith("3.") and any(r.endswith("mujoco_wasm.js") for r in fetched)
    assert (got["steps"] == 1000) == (env_id == "HalfCheetah-v5")  # the runner runs out of time; the walkers fall
    # the tab's actions replayed on the desktop's MuJoCo give the tab's observations
    core = make_locomotion_core(env_id)
    replayed = [core.reset(seed=3)] + [core.step(action).obs for action in got["actions"][:-1]]
    np.testing.assert_allclose(got["observations"][:agreeing], replayed[:agreeing], atol=1e-8)
    # and the tab's policy acts as Python's onnxruntime does, step for step
    np.testing.assert_allclose(got["actions"][:agreeing], want.actions[:agreeing], atol=1e-4)
    np.testing.assert_allclose(got["observations"][:agreeing], want.observations[:agreeing], atol=1e-5)
    if agreeing is None:
        assert got["steps"] == want.steps and got["episodeReturn"] == pytest.approx(want.episode_return, rel=1e-5)
