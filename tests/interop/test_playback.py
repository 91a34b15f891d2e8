"""Python's onnxruntime episode of a bundle (`playback.onnx_episode`, the reference the browser player matches)
feeds a Dict observation key by key and a core's legal moves as the action mask, and the player does the same.
(The reference bundles' episodes are compared in tests/web/test_player.py.)"""

from __future__ import annotations

import numpy as np
import pytest

from thrust_app.envs.core import make_core
from thrust_app.interop.bundle import OnnxPolicy
from thrust_app.interop.exporter import export_run
from thrust_app.interop.playback import onnx_episode
from thrust_app.training.trainer import train
from thrust_app.web.browser import player_page
from thrust_app.web.server import PlayerServer


def test_a_dict_observation_with_action_masks_plays_in_the_player(tmp_path):
    """The card game's bundle takes its Dict as one input per key (split by Python's manifest module under
    Pyodide) and the legal moves as `action_mask`: an early policy, whose unmasked choices include forbidden
    cards, plays in the tab exactly as in Python's onnxruntime, every card it plays in hand."""
    train("ppo", "cards", timesteps=512, seed=3, run_dir=tmp_path / "run", progress=False, log=lambda _: None)
    bundle = export_run(tmp_path / "run", tmp_path / "export" / "cards-early")
    assert [i["name"] for i in bundle.manifest["inputs"]] == ["obs.hand", "obs.target", "action_mask"]
    with PlayerServer(port=0, export_dir=tmp_path / "export") as server, player_page(server.url) as page:
        got = page.evaluate("(a) => window.thrustPlayer.runEpisode(a)", {"bundle": "cards-early", "seed": 5, "ep": "wasm"})
    want = onnx_episode(bundle.path, 5)
    assert got["actions"] == want.actions and got["episodeReturn"] == want.episode_return
    core, runner, unmasked_forbidden = make_core("cards"), OnnxPolicy(bundle), 0
    obs = core.reset(seed=5)
    for action in want.actions:
        legal = core.action_masks()
        assert legal[action]
        unmasked_forbidden += not legal[int(runner.act(np.asarray([obs], np.float32))[0])]  # no mask: all allowed
        obs = core.step(action).obs
    assert unmasked_forbidden > 0  # the mask decided some of these moves


@pytest.mark.parametrize("env", ["mountaincar", "mountaincar-continuous", "acrobot"])
def test_a_classic_control_bundle_plays_in_the_player_as_in_python(env, tmp_path):
    """The MountainCar and Acrobot cores run in the tab (gymnasium's dynamics, tested equal step for step in
    tests/envs/test_gym_adapter.py): a bundle's whole episode there equals Python's onnxruntime one."""
    algo = "td3" if env == "mountaincar-continuous" else "ppo"
    overrides = {
        "mountaincar": {},
        "mountaincar-continuous": {"learning_starts": 100, "hidden": (32, 32)},
        "acrobot": {"n_envs": 2, "n_steps": 128},  # the zoo's 16 x 256 would not fit this budget
    }[env]
    train(algo, env, timesteps=512, seed=1, run_dir=tmp_path / "run", overrides=overrides, progress=False, log=lambda _: None)
    bundle = export_run(tmp_path / "run", tmp_path / "export" / "early")
    with PlayerServer(port=0, export_dir=tmp_path / "export") as server, player_page(server.url) as page:
        got = page.evaluate("(a) => window.thrustPlayer.runEpisode(a)", {"bundle": "early", "seed": 2, "ep": "wasm"})
    want = onnx_episode(bundle.path, 2)
    assert got["steps"] == want.steps
    np.testing.assert_allclose(np.array(got["actions"], dtype=float), np.array(want.actions, dtype=float), atol=1e-5)
    assert got["episodeReturn"] == pytest.approx(want.episode_return, rel=1e-5)


#: How many colours the player's env canvas shows.
COLOURS_ON_CANVAS = """() => {
  const canvas = document.getElementById("canvas");
  const data = canvas.getContext("2d").getImageData(0, 0, canvas.width, canvas.height).data;
  const colours = new Set();
  for (let i = 0; i < data.length; i += 4) colours.add((data[i] << 16) | (data[i + 1] << 8) | data[i + 2]);
  return colours.size;
}"""


@pytest.mark.parametrize(
    "env, algo, overrides",
    [
        ("minatar-breakout", "dqn", {"learning_starts": 200, "buffer_size": 2_000}),
        ("minatar-space-invaders", "ppo", {"n_envs": 2, "n_steps": 128, "batch_size": 64}),
        # minatar's own env in Thrust's minatar pipeline: played on the core that reproduces it
        ("MinAtar/SpaceInvaders-v1", "ppo", {"n_envs": 2, "n_steps": 128, "batch_size": 64}),
    ],
)
def test_a_minatar_bundle_plays_in_the_player_as_in_python(env, algo, overrides, tmp_path):
    """The MinAtar cores (minatar's games step for step, tests/envs/test_minatar_cores.py) run in the tab, sticky
    actions drawn from the core's own seeded stream: a desktop CNN policy's episode there is Python's, action for
    action, drawn on the page's canvas; a policy trained on minatar's own env (in the minatar pipeline) too."""
    train(algo, env, timesteps=512, seed=1, run_dir=tmp_path / "run", overrides=overrides, progress=False, log=lambda _: None)
    bundle = export_run(tmp_path / "run", tmp_path / "export" / "minatar")
    assert bundle.env_id.startswith("MinAtar/") == env.startswith("MinAtar/")  # the gymnasium env's bundle names it
    with PlayerServer(port=0, export_dir=tmp_path / "export") as server, player_page(server.url) as page:
        got = page.evaluate("(a) => window.thrustPlayer.runEpisode(a)", {"bundle": "minatar", "seed": 2, "ep": "wasm"})
        drawn = page.evaluate(COLOURS_ON_CANVAS)
    want = onnx_episode(bundle.path, 2)
    assert got["actions"] == want.actions and got["episodeReturn"] == want.episode_return
    assert want.steps >= 6  # a whole episode (Breakout's shortest: 6 steps)
    assert drawn >= 3  # the board drawn: the background and at least two of the game's colours


def test_an_sb3_acrobot_model_imported_plays_in_the_player_as_in_python(tmp_path):
    """`thrust import` of an SB3 model trained on gymnasium's Acrobot-v1 gives a bundle for Thrust's twin core, and
    its episode in the tab equals Python's onnxruntime one."""
    import stable_baselines3 as sb3

    from thrust_app.cli import main

    model = sb3.PPO("MlpPolicy", "Acrobot-v1", n_steps=128, batch_size=64, n_epochs=1, seed=0, verbose=0)
    model.learn(256)
    model.save(tmp_path / "acrobot")
    out = tmp_path / "export" / "sb3-acrobot"
    assert main(["import", str(tmp_path / "acrobot.zip"), "--env", "Acrobot-v1", "--out", str(out)]) == 0
    with PlayerServer(port=0, export_dir=tmp_path / "export") as server, player_page(server.url) as page:
        got = page.evaluate("(a) => window.thrustPlayer.runEpisode(a)", {"bundle": "sb3-acrobot", "seed": 3, "ep": "wasm"})
    want = onnx_episode(out, 3)
    assert got["steps"] == want.steps and got["actions"] == [int(a) for a in want.actions]
