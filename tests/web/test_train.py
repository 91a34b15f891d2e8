"""The player's Train mode in headless Chromium: PPO in TensorFlow.js on Thrust's env cores under Pyodide.

The browser PPO computes Thrust's loss and gradients (checked against torch on fixed batches), trains the
bandit and CartPole, stops when asked, and its bundle acts as the tfjs policy does, plays in the player and
evaluates in `thrust eval` to the return the page measured.
"""

from __future__ import annotations

import base64
import json
import subprocess
import sys
import types
from pathlib import Path

import numpy as np
import pytest
import torch

from thrust_app.algos.ppo import Minibatch, PPOConfig, ppo_loss
from thrust_app.algos.rollout import compute_gae
from thrust_app.envs.core import Box, Discrete
from thrust_app.envs.vec import BatchStep
from thrust_app.interop.bundle import OnnxPolicy, load_bundle
from thrust_app.nets.flat_params import clip_grad_norm_
from thrust_app.nets.policies import ActorCritic
from thrust_app.training.normalization import NormalizedVecEnv
from thrust_app.training.run_spec import make_spec
from thrust_app.training.trainer import EVAL_SEED_OFFSET
from thrust_app.web.browser import player_page
from thrust_app.web.training_assets import TRAIN_ENVS, policy_template, training_catalog

from .test_player import needs_browser, server  # noqa: F401  (the module-scoped server fixture)

pytestmark = needs_browser


def test_catalog_is_the_desktop_presets():
    catalog = training_catalog()
    assert set(catalog["envs"]) == set(TRAIN_ENVS) and catalog["eval_seed_offset"] == EVAL_SEED_OFFSET
    fast = catalog["envs"]["cartpole"]["presets"]["fast"]
    spec = make_spec("ppo", "cartpole", preset="fast")
    assert json.dumps(fast["config"]) == json.dumps(spec.config)  # the same values
    assert (fast["timesteps"], fast["eval_every"], fast["stop_at_return"]) == (spec.timesteps, spec.eval_every, 475.0)
    assert "GAE lambda" in catalog["help"]["gae_lambda"]
    # the tab's PPO has gSDE: Pendulum's and MountainCarContinuous's zoo presets (gSDE) are offered as they are
    assert list(catalog["envs"]["pendulum"]["presets"]) == ["default", "no-sde"]
    assert catalog["envs"]["mountaincar-continuous"]["presets"]["default"]["config"]["use_sde"]


@pytest.mark.parametrize("env", TRAIN_ENVS)
def test_template_maps_every_initializer_to_a_layer(env):
    _model, description = policy_template(env)
    layers = len(description["sizes"]) - 1
    slots = sorted(
        (slot["layer"] if slot["layer"] is not None else -1, slot["kind"]) for slot in description["initializers"].values()
    )
    normaliser = [(-1, "obs_mean"), (-1, "obs_std")] if description["normalized"] else []
    assert slots == sorted([(layer, kind) for layer in range(layers) for kind in ("weight", "bias")] + normaliser)
    # the zoo's Acrobot and MountainCar (both) presets normalise: their bundles take raw observations
    assert description["normalized"] == (env in ("acrobot", "mountaincar", "mountaincar-continuous"))
    assert "sha256" not in description["manifest"] and description["manifest"]["env_id"].startswith("thrust/")


# --- the same learning as Python: one update's loss and gradients, GAE ---------------------------------


def tfjs_order(net: ActorCritic, field: str) -> list[np.ndarray]:
    """The net's parameters (field "data") or gradients ("grad") in ppo.js's variable order: policy tower
    layers, value tower layers, policy head, value head (each W as (in, out), then b), log std."""

    def get(tensor: torch.Tensor) -> torch.Tensor:
        return getattr(tensor, field)

    towers, width = net.towers, net.towers.hidden[0]
    first_w, first_b = get(towers.input_layer.weight), get(towers.input_layer.bias)
    out = []
    for index, rows in enumerate((slice(0, width), slice(width, 2 * width))):
        out += [first_w[rows].T, first_b[rows]]
        for weight, bias in zip(towers.weights, towers.biases, strict=True):
            out += [get(weight)[index], get(bias)[index, 0]]
    for head in (net.pi_head, net.vf_head):
        out += [get(head.weight).T, get(head.bias)]
    if not net.discrete:
        out.append(get(net.log_std))
    return [t.detach().numpy().astype(np.float32).copy() for t in out]


LOSS_IN_PAGE = """async ({ backend, spec, weights, batch, clipRange, config }) => {
  const { tf, useBackend } = await import("./src/train/tf.js");
  const ppo = await import("./src/train/ppo.js");
  await useBackend(backend);
  const net = new ppo.ActorCritic(spec, ppo.makeRng(0));
  net.setWeights(weights);
  const rows = batch.returns.length;
  const tensors = {
    obs: tf.tensor2d(batch.obs.flat(), [rows, spec.obsSize]),
    actions: spec.discrete ? tf.tensor1d(batch.actions, "int32") : tf.tensor2d(batch.actions.flat(), [rows, spec.outSize]),
    oldLogProb: tf.tensor1d(batch.oldLogProb), oldValue: tf.tensor1d(batch.oldValue),
    advantages: tf.tensor1d(batch.advantages), returns: tf.tensor1d(batch.returns),
  };
  const { loss, logs, grads } = ppo.clippedGradients(net, tensors, clipRange, config);
  const out = {  // asynchronous reads: WebGPU has no synchronous one
    loss: (await loss.data())[0],
    logs: Array.from(await logs.data()),
    grads: await Promise.all(net.variables().map(async (v) => Array.from(await grads[v.name].data()))),
  };
  net.dispose();
  return out;
}"""


@pytest.fixture(scope="module")
def page(server):  # noqa: F811
    with player_page(server.url, "?mode=train") as opened:
        yield opened


@pytest.mark.parametrize("backend", ["wasm", "cpu", "webgpu"])
@pytest.mark.parametrize(
    ("space", "clip_range_vf", "sde"),
    [
        (Discrete(3), 0.0, False),
        (Box((-2.0, -1.0), (2.0, 1.0), (2,)), 0.3, False),
        (Box((-2.0, -1.0), (2.0, 1.0), (2,)), 0.0, True),  # gSDE: sigma(s) from the policy's features
    ],
)
def test_one_update_matches_torch(page, backend, space, clip_range_vf, sde):
    torch.manual_seed(1)
    obs_size, rows = 4, 64
    net = ActorCritic((obs_size,), space, (64, 64), "tanh", log_std_init=-0.3, sde_sample_freq=-1 if sde else None)
    config = PPOConfig(clip_range_vf=clip_range_vf, ent_coef=0.01, vf_coef=0.5, max_grad_norm=0.5)
    obs = torch.randn(rows, obs_size)
    discrete = isinstance(space, Discrete)
    with torch.no_grad():
        actions, log_prob, value = net.sample(obs)
    batch = Minibatch(
        old_log_prob=log_prob + 0.1 * torch.randn(rows),  # a policy that moved: ratios away from 1, some clipped
        old_value=value + 0.2 * torch.randn(rows),
        advantages=torch.randn(rows) * 3 + 1,
        returns=torch.randn(rows),
    )
    net.zero_grad()
    loss, logs = ppo_loss(*net.evaluate_actions(obs, actions), batch=batch, clip_range=0.1, config=config)
    logs = logs.detach()
    loss.backward()
    clip_grad_norm_(net.flat, config.max_grad_norm)
    assert float(logs[4]) > 0.05  # the clipped branch is exercised

    spec = {
        "obsSize": obs_size,
        "outSize": space.n if discrete else 2,
        "discrete": discrete,
        "hidden": [64, 64],
        "activation": "tanh",
        "sde": sde,
    }
    if not discrete:
        spec |= {"low": list(space.low), "high": list(space.high)}
    got = page.evaluate(
        LOSS_IN_PAGE,
        {
            "backend": backend,
            "spec": spec,
            "weights": [w.ravel().tolist() for w in tfjs_order(net, "data")],
            "batch": {
                "obs": obs.tolist(),
                "actions": actions.tolist(),
                "oldLogProb": batch.old_log_prob.tolist(),
                "oldValue": batch.old_value.tolist(),
                "advantages": batch.advantages.tolist(),
                "returns": batch.returns.tolist(),
            },
            "clipRange": 0.1,
            "config": {
                "normalize_advantage": True,
                "clip_range_vf": clip_range_vf,
                "vf_coef": 0.5,
                "ent_coef": 0.01,
                "max_grad_norm": 0.5,
            },
        },
    )
    assert got["loss"] == pytest.approx(loss.item(), rel=1e-5, abs=1e-6)
    np.testing.assert_allclose(got["logs"], logs.numpy(), rtol=1e-4, atol=1e-6)
    for mine, theirs in zip(got["grads"], tfjs_order(net, "grad"), strict=True):
        np.testing.assert_allclose(np.asarray(mine, dtype=np.float32), theirs.ravel(), rtol=1e-3, atol=2e-6)


SAMPLED_IN_PAGE = """async ({ spec, rows }) => {
  const { tf, useBackend } = await import("./src/train/tf.js");
  const ppo = await import("./src/train/ppo.js");
  const { BrowserPPO } = await import("./src/train/trainer.js");
  await useBackend("wasm");
  const net = new ppo.ActorCritic(spec, ppo.makeRng(0));
  // the rollout's sampler as BrowserPPO runs it, without its envs: one row per env
  const sampler = Object.assign(Object.create(BrowserPPO.prototype), {
    net, rng: ppo.makeRng(1), discrete: spec.discrete, config: { n_envs: rows },
  });
  const obs = tf.randomNormal([rows, spec.obsSize], 0, 2, "float32", 3);
  const out = net.forward(obs);
  const [head, features] = await Promise.all([out.head.data(), out.features.data()]);
  const logStd = spec.discrete ? null : await net.logStd.data();
  if (net.sde) sampler.resampleExploration(logStd);
  const sampled = sampler.sample(head, rows, logStd, net.sde ? features : null);
  const actions = spec.discrete ? tf.tensor1d(sampled.actions, "int32") : tf.tensor2d(sampled.actions, [rows, spec.outSize]);
  const { logProb } = net.logProbAndEntropy(out.head, actions, out.features);
  const result = { host: Array.from(sampled.logProbs), update: Array.from(await logProb.data()) };
  tf.dispose([obs, out.head, out.value, out.features, actions, logProb]);
  net.dispose();
  return result;
}"""


@pytest.mark.parametrize(
    "spec",
    [
        {"outSize": 3, "discrete": True},
        {"outSize": 2, "discrete": False, "logStdInit": -0.5, "low": [-2.0, -1.0], "high": [2.0, 1.0]},
        {"outSize": 2, "discrete": False, "logStdInit": -2.0, "low": [-2.0, -1.0], "high": [2.0, 1.0], "sde": True},
    ],
    ids=["categorical", "gaussian", "gsde"],
)
def test_the_rollouts_log_probabilities_are_the_updates_at_the_same_weights(page, spec):
    """The tab samples actions on the host (trainer.js) and the update recomputes log pi(a|s) in TensorFlow.js
    (ppo.js): before any step they agree, so the first minibatch's ratio is 1 (gSDE's sigma(s) from z(s) included)."""
    spec = {"obsSize": 4, "hidden": [16, 16], "activation": "tanh"} | spec
    got = page.evaluate(SAMPLED_IN_PAGE, {"spec": spec, "rows": 64})
    np.testing.assert_allclose(got["host"], got["update"], rtol=1e-4, atol=1e-4)
    assert np.std(got["host"]) > 1e-3  # the rows differ (near-uniform logits too): not a comparison of constants


def test_gae_matches_torch(page):
    rng = np.random.default_rng(0)
    steps, envs = 16, 3
    rewards, values = rng.normal(size=(steps, envs)), rng.normal(size=(steps, envs))
    dones, last = (rng.random((steps, envs)) < 0.2).astype(np.float64), rng.normal(size=envs)
    got = page.evaluate(
        """async ([r, v, d, last, T, N]) => {
          const { computeGae } = await import("./src/train/ppo.js");
          const [rewards, values, dones, lastValues] = [r, v, d, last].map((a) => Float32Array.from(a));
          const out = computeGae(rewards, values, dones, lastValues, T, N, 0.98, 0.8);
          return [Array.from(out.advantages), Array.from(out.returns)];
        }""",
        [rewards.ravel().tolist(), values.ravel().tolist(), dones.ravel().tolist(), last.tolist(), steps, envs],
    )
    as_tensor = lambda a: torch.tensor(a, dtype=torch.float32)  # noqa: E731
    advantages, returns = compute_gae(as_tensor(rewards), as_tensor(values), as_tensor(dones), as_tensor(last), 0.98, 0.8)
    np.testing.assert_allclose(np.reshape(got[0], (steps, envs)), advantages.numpy(), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(np.reshape(got[1], (steps, envs)), returns.numpy(), rtol=1e-5, atol=1e-5)


NORMALIZE_IN_PAGE = """async ({ config, first, steps }) => {
  const { VecNormalizer } = await import("./src/train/normalize.js");
  const normalizer = new VecNormalizer(config, first[0].length, first.length);
  normalizer.observe(first.flat(), first.length);
  const out = [];
  for (const { obs, rewards, dones } of steps) {
    normalizer.observe(obs.flat(), obs.length);
    out.push({ obs: Array.from(normalizer.normalize(obs.flat())), rewards: Array.from(normalizer.rewards(rewards, dones)) });
  }
  return out;
}"""


def test_normalisation_matches_python_on_the_same_stream(page):
    """The tab's VecNormalizer (normalize.js) and Python's NormalizedVecEnv given the same observations, rewards
    and episode ends give the same normalised observations and rewards (up to float32 rounding)."""
    rng = np.random.default_rng(0)
    envs, size, count = 3, 4, 40
    f32 = lambda a: np.asarray(a, np.float32).astype(np.float64)  # noqa: E731  (observations as envs give them)
    first = f32(rng.normal(5.0, 3.0, (envs, size)))
    steps = [
        {
            "obs": rng.normal(5.0, 3.0, (envs, size)) * [1, 10, 0.1, 100],
            "rewards": rng.normal(-1, 2, envs),
            "dones": rng.random(envs) < 0.1,
        }
        for _ in range(count)
    ]
    config = {"norm_obs": True, "norm_reward": True, "clip_obs": 2.0, "clip_reward": 3.0, "norm_epsilon": 1e-8, "gamma": 0.95}
    wire = [{key: value.tolist() for key, value in step.items()} for step in steps]
    got = page.evaluate(NORMALIZE_IN_PAGE, {"config": config, "first": first.tolist(), "steps": wire})
    stream = iter(steps)

    def step(_actions):
        s = next(stream)
        obs = s["obs"].astype(np.float32)
        no = np.zeros(envs, bool)
        return BatchStep(obs, s["rewards"].astype(np.float32), s["dones"], no, obs, None, None)

    space = types.SimpleNamespace(shape=(size,))
    venv = types.SimpleNamespace(
        backend=types.SimpleNamespace(name="numpy"),
        env_id="stream",
        num_envs=envs,
        observation_space=space,
        action_space=None,
        reset=lambda seed: first.astype(np.float32),
        step=step,
    )
    python = NormalizedVecEnv(venv, norm_obs=True, norm_reward=True, clip_obs=2.0, clip_reward=3.0, gamma=0.95, epsilon=1e-8)
    python.reset()
    largest = 0.0
    for mine in got:
        theirs = python.step(None)
        # numpy reduces float32 observations in float32, the page in float64: the statistics differ in float32's last bits
        np.testing.assert_allclose(np.asarray(mine["obs"], np.float32), theirs.obs.ravel(), rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(mine["rewards"], theirs.reward, rtol=1e-6)
        largest = max(largest, np.abs(theirs.obs).max())
    assert largest == 2.0  # the clip was reached


# --- training, stopping, exporting ----------------------------------------------------------------------


def saved_bundle(page, folder: Path) -> Path:
    trained = page.evaluate("window.thrustPlayer.trainedBundle()")
    folder.mkdir(parents=True)
    (folder / "policy.onnx").write_bytes(base64.b64decode(trained["model"]))
    (folder / "manifest.json").write_text(json.dumps(trained["manifest"]))
    return folder


def thrust_eval_mean(folder: Path, seed: int, episodes: int = 10) -> float:
    done = subprocess.run(
        [sys.executable, "-m", "thrust_app", "eval", str(folder), "--seed", str(seed), "--episodes", str(episodes)],
        capture_output=True,
        text=True,
        check=True,
    )
    return float(done.stdout.split("mean return ")[1].split()[0])


def test_bandit_trains_to_100_percent_and_its_bundle_plays_everywhere(page, tmp_path):
    result = page.evaluate("window.thrustPlayer.trainInBrowser({env: 'bandit', seed: 3, backend: 'wasm'})")
    assert result["solved"] and result["evalMean"] == 1.0 and result["backend"] == "wasm"
    folder = saved_bundle(page, tmp_path / "bandit")
    bundle = load_bundle(folder)  # Python's checks: schema, sha256, ONNX IR version
    assert bundle.manifest["training"]["eval_mean"] == 1.0 and "TensorFlow.js" in bundle.manifest["training"]["device"]
    observations = [[0.0], [1.0], [0.3], [0.7]]
    tfjs_actions = page.evaluate("obs => window.thrustPlayer.trainedActions(obs)", observations)
    assert OnnxPolicy(bundle).act(np.asarray(observations, dtype=np.float32)).tolist() == tfjs_actions == [0, 1, 0, 1]
    assert thrust_eval_mean(folder, 3 + EVAL_SEED_OFFSET) == 1.0
    active = page.evaluate("window.thrustPlayer.activeBundle")
    episode = page.evaluate("name => window.thrustPlayer.runEpisode({bundle: name, seed: 5, ep: 'wasm'})", active)
    assert episode["episodeReturn"] == 1.0  # the player's onnxruntime-web plays the tab's bundle


def test_cartpole_solves_and_the_bundle_evaluates_to_the_same_return(page, tmp_path):
    result = page.evaluate(
        "window.thrustPlayer.trainInBrowser({env: 'cartpole', preset: 'fast', seed: 0, backend: 'wasm', maxSeconds: 150})"
    )
    assert result["solved"] and result["evalMean"] >= 475, result
    assert result["steps"] < 50_000 and result["stepsPerSecond"] > 0
    # issue #40: the curve's x axis follows the run (it spanned the whole budget, the solved run in its first 6%)
    x_end = float(page.eval_on_selector("#train-chart", "canvas => canvas.dataset.xEnd"))
    assert result["steps"] <= x_end <= 1.6 * result["steps"], (x_end, result["steps"])
    folder = saved_bundle(page, tmp_path / "cartpole")
    assert thrust_eval_mean(folder, 0 + EVAL_SEED_OFFSET) == pytest.approx(result["evalMean"])
    observations = np.random.default_rng(0).normal(0, 0.5, size=(256, 4)).astype(np.float32)
    tfjs_actions = page.evaluate("obs => window.thrustPlayer.trainedActions(obs)", observations.tolist())
    assert OnnxPolicy(load_bundle(folder)).act(observations).tolist() == tfjs_actions


def test_acrobot_trains_on_normalised_observations_and_its_bundle_takes_raw_ones(page, tmp_path):
    """The zoo's Acrobot preset (normalize: true) solves in the tab; the bundle holds the run's statistics in
    front of the policy, so onnxruntime on raw observations acts as the tab's policy does."""
    result = page.evaluate("window.thrustPlayer.trainInBrowser({env: 'acrobot', seed: 0, backend: 'wasm', maxSeconds: 150})")
    assert result["solved"] and result["evalMean"] >= -100, result
    folder = saved_bundle(page, tmp_path / "acrobot")
    # the same 10 episodes; the tab's policy is tfjs's float32 forward behind JavaScript's normalisation, the bundle's
    # onnxruntime's with the statistics folded in: where a state sits on a greedy action's edge the two may pick apart
    # and that swing ends a few steps sooner or later (measured: -91.1 against the tab's -91.3), so the means to 1%
    assert thrust_eval_mean(folder, 0 + EVAL_SEED_OFFSET) == pytest.approx(result["evalMean"], rel=0.01)
    # raw Acrobot observations: cos and sin of both angles, the speeds within their bounds (4 pi, 9 pi)
    rng = np.random.default_rng(0)
    angles, speeds = rng.uniform(-np.pi, np.pi, (256, 2)), rng.uniform(-1, 1, (256, 2)) * [4 * np.pi, 9 * np.pi]
    observations = np.column_stack(
        [np.cos(angles[:, 0]), np.sin(angles[:, 0]), np.cos(angles[:, 1]), np.sin(angles[:, 1]), speeds]
    )
    observations = observations.astype(np.float32)
    tfjs_actions = page.evaluate("obs => window.thrustPlayer.trainedActions(obs)", observations.tolist())
    assert OnnxPolicy(load_bundle(folder)).act(observations).tolist() == tfjs_actions
    assert len(set(tfjs_actions)) > 1


def test_mountaincar_continuous_solves_with_gsde_and_its_bundle_acts_as_the_tab_does(page, tmp_path):
    """The zoo's MountainCarContinuous preset (one env x 8 steps, gSDE, torch's default init, normalised) reaches
    the flag in the tab; the bundle's actions on raw observations are the tab policy's means."""
    result = page.evaluate(
        "window.thrustPlayer.trainInBrowser({env: 'mountaincar-continuous', seed: 0, backend: 'wasm', maxSeconds: 150})"
    )
    assert result["solved"] and result["evalMean"] >= 90, result
    folder = saved_bundle(page, tmp_path / "mountaincar-continuous")
    rng = np.random.default_rng(0)
    observations = np.column_stack([rng.uniform(-1.2, 0.6, 256), rng.uniform(-0.07, 0.07, 256)]).astype(np.float32)
    tfjs_actions = page.evaluate("obs => window.thrustPlayer.trainedActions(obs)", observations.tolist())
    onnx_actions = OnnxPolicy(load_bundle(folder)).act(observations)
    np.testing.assert_allclose(onnx_actions.ravel(), tfjs_actions, atol=1e-4)
    assert np.ptp(tfjs_actions) > 0.5  # a policy that pushes both ways


def test_stop_mid_training_keeps_a_playable_policy_and_the_page_responsive(page):
    request = {"env": "cartpole", "preset": "default", "seed": 1, "backend": "wasm", "stopAt": None}
    page.evaluate("r => { window.__run = window.thrustPlayer.trainInBrowser(r); }", request)  # not awaited
    page.wait_for_function("document.getElementById('train-progress').value >= 2048", timeout=120_000)
    # the training loop runs in the worker: the page's own event loop keeps answering (a main-thread loop
    # would hold it for seconds)
    delays = page.evaluate(
        """async () => {
          const delays = [];
          for (let k = 0; k < 20; k++) {
            const asked = performance.now();
            await new Promise((resolve) => setTimeout(resolve, 0));
            delays.push(performance.now() - asked);
            await new Promise((resolve) => setTimeout(resolve, 50));
          }
          return delays;
        }"""
    )
    assert max(delays) < 1000, delays
    assert page.is_enabled("#train-stop") and not page.is_enabled("#train-start")
    page.click("#train-stop")
    result = page.evaluate("window.__run")
    assert result["status"] == "stopped" and 2048 <= result["steps"] < 100_000
    assert page.is_enabled("#train-start") and not page.is_enabled("#train-stop")
    assert page.is_visible("#train-download-onnx")
    active = page.evaluate("window.thrustPlayer.activeBundle")
    assert active.startswith("trained in this tab (cartpole, seed 1)")
    episode = page.evaluate("name => window.thrustPlayer.runEpisode({bundle: name, seed: 0, ep: 'wasm'})", active)
    assert episode["steps"] >= 1
    memory = page.evaluate("window.thrustPlayer.trainingMemory()")
    assert memory["numTensors"] < 200  # the trained net, Adam's moments, nothing per step


@pytest.mark.parametrize(
    ("request_", "message"),
    [
        ({"env": "atari"}, 'no env "atari"; it trains bandit, cartpole, pendulum'),
        ({"env": "cartpole", "algo": "sac"}, 'trains ppo only, not "sac"'),
        ({"env": "cartpole", "backend": "tpu"}, 'unknown backend "tpu"; choose auto, wasm, cpu, webgpu'),
        ({"env": "cartpole", "preset": "turbo"}, 'no preset "turbo" for cartpole; its presets: default, fast'),
        ({"env": "cartpole", "config": {"n_envs": 0}}, "n_envs must be at least 1"),
        ({"env": "cartpole", "timesteps": 10}, "timesteps must be at least one rollout"),
    ],
)
def test_bad_requests_are_refused_in_one_line(page, request_, message):
    with pytest.raises(Exception, match=message.replace("(", r"\(")):
        page.evaluate("r => window.thrustPlayer.trainInBrowser(r)", request_)


def test_webgpu_can_be_chosen_by_hand(page):
    """Selectable even where it is a software adapter (SwiftShader here, ~40x slower than wasm): one rollout."""
    result = page.evaluate(
        "window.thrustPlayer.trainInBrowser({env: 'bandit', seed: 0, backend: 'webgpu', timesteps: 256, stopAt: null})"
    )
    assert result["backend"] == "webgpu" and result["steps"] == 256 and result["status"] == "budget"
    assert page.evaluate("window.thrustPlayer.trainedBundle()")["manifest"]["training"]["device"].endswith(
        "webgpu (software adapter)"
    )


def test_auto_backend_times_both_and_skips_the_software_gpu(page):
    result = page.evaluate(
        "window.thrustPlayer.trainInBrowser({env: 'bandit', seed: 0, backend: 'auto', timesteps: 512, stopAt: null})"
    )
    timings = result["backendTimings"]
    assert isinstance(timings["wasm"], float) and isinstance(timings["cpu"], float)
    assert "software adapter" in timings["webgpu"]  # SwiftShader here
    assert result["backend"] == min(("wasm", "cpu"), key=lambda name: timings[name])
    assert "wasm" in page.inner_text("#train-backend-status") and "cpu" in page.inner_text("#train-backend-status")
