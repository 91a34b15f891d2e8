"""Recurrent PPO: an update's sequence minibatches recompute exactly what the rollout recorded step by step,
it learns the zoo's memory test where feed-forward PPO cannot, and the bundle carries the memory."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest
import torch

from thrust_app.algos import RecurrentPPO, get_algo
from thrust_app.algos.base import NumpyPolicy
from thrust_app.algos.recurrent_ppo import as_chunks, sequence_length
from thrust_app.config import apply_overrides
from thrust_app.envs.batched import make_batched
from thrust_app.envs.tensors import EnvIO
from thrust_app.interop.bundle import OnnxPolicy, load_bundle
from thrust_app.interop.exporter import export_run
from thrust_app.training.evaluation import evaluate
from thrust_app.training.presets import get_preset
from thrust_app.training.trainer import load_policy, train
from thrust_app.web.server import REFERENCE_DIR

QUIET = {"progress": False, "log": lambda _: None}


def collected(env_id: str, overrides: dict, n_envs: int = 4):
    """A recurrent PPO and one rollout of `env_id` with its advantages."""
    from thrust_app.algos.rollout import compute_gae

    config = apply_overrides(RecurrentPPO.Config(), {"n_envs": n_envs, **overrides})
    env = make_batched(env_id, n_envs, seed=1)
    algo = RecurrentPPO(env.observation_space.shape, env.action_space, config, torch.device("cpu"), 0)
    torch.manual_seed(0)
    env_io = EnvIO(torch.device("cpu"))
    obs = env_io.reset(env, 1)
    algo.collect(env, env_io, obs)  # a first rollout: the second starts mid-episode, from a carried memory
    rollout, _ = algo.collect(env, env_io, obs)
    advantages, returns = compute_gae(rollout.rewards, rollout.values, rollout.dones, rollout.last_values, 0.99, 0.95)
    return algo, rollout, advantages, returns


@pytest.mark.parametrize(
    "env_id, overrides",
    [
        ("cartpole-novel", {"n_steps": 48, "batch_size": 32}),  # chunks of 24 steps, one per minibatch
        (
            "cartpole-novel",
            {"n_steps": 48, "batch_size": 40, "rnn_type": "gru", "critic_rnn": "shared"},
        ),  # 16-step chunks, 2 a batch
        ("pendulum-novel", {"n_steps": 120, "batch_size": 40, "critic_rnn": "none", "n_lstm_layers": 2}),
    ],
    ids=["lstm", "gru-shared", "box-2-layers-no-critic-memory"],
)
def test_sequence_minibatches_recompute_what_the_rollout_recorded(env_id, overrides):
    """Every minibatch's sequences start from the memory the env had there and clear it at episode starts, so
    at the same weights the update's log-probabilities and values are the rollout's, step for step."""
    algo, rollout, advantages, returns = collected(env_id, {"lstm_hidden_size": 16, **overrides})
    length = sequence_length(algo.config.n_steps, algo.config.batch_size)
    assert length < algo.config.n_steps  # chunks that start mid-rollout, from a recorded memory
    assert rollout.starts[1:].any() and rollout.states[length].abs().sum() > 0
    seen = 0
    for (sequences, actions, old_log_prob, old_value, *_), masks in algo.minibatches(rollout, advantages, returns):
        assert masks is None and sequences.obs.shape[0] == length
        with torch.no_grad():
            log_prob, _, value = algo.net.evaluate_actions(sequences, actions)
        torch.testing.assert_close(log_prob, old_log_prob, atol=1e-5, rtol=1e-5)
        torch.testing.assert_close(value, old_value, atol=1e-5, rtol=1e-5)
        seen += len(actions)
    assert seen == algo.config.n_steps * algo.config.n_envs  # every step once per epoch


def test_chunks_keep_each_envs_steps_in_order():
    steps = torch.arange(12).reshape(6, 2)  # (T, N): step t of env n is 2t + n
    chunks = as_chunks(steps, 3)
    assert chunks.T.tolist() == [[0, 2, 4], [1, 3, 5], [6, 8, 10], [7, 9, 11]]
    assert sequence_length(1024, 64) == 64 and sequence_length(32, 256) == 32 and sequence_length(100, 64) == 50


def test_the_zoos_name_finds_it():
    assert get_algo("ppo_lstm") is RecurrentPPO


def final_and_best(run_dir) -> tuple[float, float]:
    import json

    evals = [r["eval_mean"] for r in map(json.loads, (run_dir / "metrics.jsonl").read_text().splitlines()) if "eval_mean" in r]
    return evals[-1], max(evals)


def test_memory_learns_cartpole_without_velocities_where_feed_forward_ppo_cannot(tmp_path):
    """The zoo's ppo_lstm preset on CartPoleNoVel (Thrust's batched twin) passes 475 within 30k steps; PPO with
    the same settings and no memory stays far below (measured: best evaluations 44-46 over 3 seeds). Seeds 1, 2
    and 3 pass 475 within 30k, seed 0 ends at 299 (and passes within 40k, where seed 3 does not): one seed's run is
    that noisy, so the test trains seed 1."""
    common = dict(timesteps=30_000, seed=1, device="cpu", eval_every=2048, **QUIET)
    recurrent = train("recurrent_ppo", "cartpole-novel", run_dir=tmp_path / "lstm", stop_at_return=475, **common)
    assert recurrent["eval_mean"] >= 475
    ppo_fields = vars(get_algo("ppo").Config())
    settings = {k: v for k, v in get_preset("recurrent_ppo", "CartPoleNoVel-v1").config.items() if k in ppo_fields}
    train("ppo", "cartpole-novel", run_dir=tmp_path / "ff", overrides=settings, **common)
    assert final_and_best(tmp_path / "ff")[1] < 150


def test_the_bundle_carries_the_memory_like_the_run(tmp_path):
    """Exported with normalisation folded in, the bundle's episodes (memory carried in onnxruntime) are the run's
    torch policy's, step for step."""
    run = tmp_path / "run"
    train("recurrent_ppo", "cartpole-novel", timesteps=4096, seed=2, run_dir=run, device="cpu", eval_episodes=3, **QUIET)
    bundle = export_run(run, tmp_path / "bundle")
    assert bundle.manifest["memory"]["size"] == 2 * 64 and [i["name"] for i in bundle.manifest["inputs"]] == ["obs", "state"]
    _, policy = load_policy(run)
    torch_result = evaluate(NumpyPolicy(policy), "cartpole-novel", episodes=4, seed=7)
    onnx_result = evaluate(OnnxPolicy(load_bundle(bundle.path)), "cartpole-novel", episodes=4, seed=7)
    assert onnx_result.lengths == torch_result.lengths and onnx_result.returns == torch_result.returns


def test_the_reference_bundle_needs_its_memory():
    """The committed recurrent bundle balances the velocity-free pole when its memory is carried, and fails when
    the memory is wiped every step: what it learned is in the memory."""
    runner = OnnxPolicy(load_bundle(REFERENCE_DIR / "cartpole-novel-recurrent_ppo"))
    carried = evaluate(runner, "cartpole-novel", episodes=5, seed=11)

    def forgetful(obs, masks=None):
        return runner.act(obs, masks, np.zeros((len(obs), runner.state_size), np.float32))[0]

    wiped = evaluate(forgetful, "cartpole-novel", episodes=5, seed=11)
    assert carried.mean >= 400 and wiped.mean < 100


def test_masks_and_memory_together(tmp_path):
    """sb3-contrib #101, which no anchor ships: on an env whose target is shown once and whose forbidden
    actions are punished, recurrent PPO under the masks never picks a forbidden action and learns to recall the
    target; PPO under the same masks, without memory, stays at random play among the allowed actions (3.3)."""
    recall = gym.spec("ThrustTest/MaskedRecall-v0").entry_point
    recall.picks["forbidden"] = 0
    small = {"lstm_hidden_size": 32, "hidden": (32,), "n_steps": 32, "batch_size": 64, "learning_rate": 1e-3}
    common = dict(timesteps=8192, seed=0, device="cpu", eval_every=4096, **QUIET)
    recurrent = train("recurrent_ppo", "ThrustTest/MaskedRecall-v0", run_dir=tmp_path / "r", overrides=small, **common)
    flat = train("ppo", "ThrustTest/MaskedRecall-v0", run_dir=tmp_path / "f", **common)
    assert recall.picks["forbidden"] == 0  # every sampled and every evaluated action was allowed
    assert recurrent["eval_mean"] >= 9.0 and flat["eval_mean"] <= 4.5
    bundle = export_run(tmp_path / "r", tmp_path / "bundle")  # the bundle takes the memory and the mask
    assert [i["name"] for i in bundle.manifest["inputs"]] == ["obs", "state", "action_mask"]
    played = evaluate(OnnxPolicy(bundle), "ThrustTest/MaskedRecall-v0", episodes=10, seed=5)
    assert played.mean >= 9.0 and recall.picks["forbidden"] == 0
