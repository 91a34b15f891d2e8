"""Training: every algorithm learns the bandit, every algo x env pair runs, runs are complete on disk,
a resumed run equals an uninterrupted one, and bad input is refused with a clear message."""

from __future__ import annotations

import json
import pickle

import numpy as np
import pytest
import torch

from thrust_app.algos import ALGOS, ActionSpaceError
from thrust_app.algos.base import deterministic_action
from thrust_app.cli import main as thrust_main
from thrust_app.config import ConfigError
from thrust_app.device import DeviceError, resolve_device
from thrust_app.envs.core import UnknownEnvError
from thrust_app.evaluation import evaluate
from thrust_app.runs import CheckpointError, RunDirError, read_jsonl
from thrust_app.trainer import load_policy, resume, train

QUIET = {"progress": False, "log": lambda _: None}
SUMMARY_KEYS = {"algo", "env", "seed", "device", "timesteps", "wall_s", "sps", "eval_mean", "eval_std",
                "solved_at_step", "solved_at_s"}


def bandit_accuracy(run_dir) -> float:
    spec, policy = load_policy(run_dir)
    act = lambda obs: deterministic_action(policy, torch.as_tensor(obs)).numpy()  # noqa: E731
    return evaluate(act, spec.env, episodes=200, seed=123).mean


@pytest.mark.parametrize("algo", ["a2c", "ppo", "dqn"])
def test_every_discrete_algorithm_learns_the_bandit(algo, tmp_path):
    summary = train(algo, "bandit", seed=1, run_dir=tmp_path / algo, device="cpu", **QUIET)
    assert summary["solved_at_step"] is not None
    assert bandit_accuracy(tmp_path / algo) >= 0.98  # a random policy scores 0.5


SMOKE = [
    ("a2c", "cartpole", {}), ("a2c", "pendulum", {}), ("a2c", "snake", {"n_envs": 2}),
    ("ppo", "cartpole", {}), ("ppo", "pendulum", {"n_steps": 64}), ("ppo", "snake", {"n_envs": 2, "n_steps": 32}),
    ("dqn", "cartpole", {"learning_starts": 100, "train_freq": 16, "gradient_steps": 4, "hidden": "64,64"}),
    ("dqn", "snake", {"learning_starts": 100, "buffer_size": 1000}),
    ("sac", "pendulum", {"learning_starts": 100, "hidden": "32,32"}),
    ("ppo", "CartPole-v1", {}),  # gymnasium's own envs train too
    ("sac", "MountainCarContinuous-v0", {"learning_starts": 50, "hidden": "16,16"}),
    ("dqn", "Acrobot-v1", {"learning_starts": 50, "train_freq": 8}),
]


@pytest.mark.parametrize("algo, env, overrides", SMOKE, ids=[f"{a}-{e}" for a, e, _ in SMOKE])
def test_every_algo_env_pair_trains_and_leaves_a_complete_run(algo, env, overrides, tmp_path):
    summary = train(algo, env, timesteps=600, seed=0, device="cpu", run_dir=tmp_path, eval_episodes=2,
                    overrides=overrides, **QUIET)
    assert SUMMARY_KEYS <= summary.keys() and summary["timesteps"] >= 600
    assert json.loads((tmp_path / "summary.json").read_text()) == summary
    config = json.loads((tmp_path / "config.json").read_text())
    assert config["algo"] == algo and config["command"].startswith(f"thrust train {algo}")
    records = read_jsonl(tmp_path / "metrics.jsonl")
    assert {r["kind"] for r in records} == {"train", "eval"}
    assert (tmp_path / "last.pt").is_file()
    assert np.isfinite(summary["eval_mean"])


def comparable(records):
    """Metrics without the timing fields, which differ run to run by nature."""
    return [{k: v for k, v in r.items() if k not in ("wall_s", "train_s", "sps")} for r in records]


@pytest.mark.parametrize("algo, env, overrides", [
    ("ppo", "cartpole", {"n_steps": 16}),
    ("dqn", "cartpole", {"learning_starts": 200, "train_freq": 8, "gradient_steps": 2, "hidden": "64,64",
                         "target_update_interval": 100}),
    ("sac", "pendulum", {"learning_starts": 100, "hidden": "32,32"}),
])
def test_resumed_run_equals_uninterrupted_run(algo, env, overrides, tmp_path):
    kwargs = dict(timesteps=2400, seed=3, device="cpu", eval_every=600, eval_episodes=2, overrides=overrides,
                  checkpoint_every=10**9, **QUIET)
    whole = train(algo, env, run_dir=tmp_path / "whole", **kwargs)
    calls = iter(range(10**6))
    stopped = train(algo, env, run_dir=tmp_path / "split", should_stop=lambda: next(calls) >= 7, **kwargs)
    assert stopped["status"] == "stopped" and stopped["timesteps"] < 2400
    resumed = resume(tmp_path / "split", **QUIET)
    assert resumed["status"] == "finished"
    assert comparable(read_jsonl(tmp_path / "split" / "metrics.jsonl")) == comparable(
        read_jsonl(tmp_path / "whole" / "metrics.jsonl"))
    assert resumed["eval_mean"] == whole["eval_mean"]


def test_same_seed_gives_the_same_metrics(tmp_path):
    runs = [train("ppo", "pendulum", timesteps=1024, seed=5, device="cpu", run_dir=tmp_path / str(i),
                  overrides={"n_steps": 64}, eval_episodes=2, **QUIET) for i in range(2)]
    assert comparable(read_jsonl(tmp_path / "0" / "metrics.jsonl")) == comparable(read_jsonl(tmp_path / "1" / "metrics.jsonl"))
    assert runs[0]["eval_mean"] == runs[1]["eval_mean"]


def test_stop_at_return_stops_once_an_evaluation_reaches_it(tmp_path):
    summary = train("ppo", "bandit", timesteps=50_000, seed=0, device="cpu", run_dir=tmp_path, eval_every=512,
                    stop_at_return=0.9, **QUIET)
    assert summary["status"] == "solved" and summary["timesteps"] < 50_000
    assert summary["eval_mean"] >= 0.9 and summary["solved_at_step"] == summary["timesteps"]


@pytest.mark.parametrize("overrides, message", [
    (["lerning_rate=0.1"], "did you mean 'learning_rate'"),
    (["n_steps=abc"], "n_steps: cannot read 'abc'; expected an integer"),
    (["n_steps=0"], "n_steps must be >= 1"),
    (["gamma=1.5"], r"gamma must be in \[0, 1\]"),
    (["activation=sigmoid"], "not one of tanh, relu"),
    (["learning_rate"], "expects key=value"),
])
def test_bad_config_is_refused_naming_the_problem(overrides, message, tmp_path):
    with pytest.raises(ConfigError, match=message):
        train("ppo", "cartpole", run_dir=tmp_path, overrides=overrides, **QUIET)
    assert not (tmp_path / "config.json").exists()


def test_algorithm_and_env_mismatches_are_refused():
    with pytest.raises(ActionSpaceError, match="dqn needs a Discrete action space.*sac, ppo or a2c"):
        train("dqn", "pendulum", **QUIET)
    with pytest.raises(ActionSpaceError, match="sac needs a Box action space"):
        train("sac", "cartpole", **QUIET)
    with pytest.raises(ValueError, match="Box observation space"):
        train("ppo", "FrozenLake-v1", **QUIET)
    with pytest.raises(UnknownEnvError, match="valid Thrust names"):
        train("ppo", "cartpool", **QUIET)
    with pytest.raises(ValueError, match="choose one of a2c, ppo, dqn, sac"):
        train("trpo", "cartpole", **QUIET)


@pytest.mark.skipif(torch.cuda.is_available(), reason="this machine has CUDA, so asking for it is no error")
def test_cuda_without_a_gpu_is_a_clear_error():
    with pytest.raises(DeviceError, match="no CUDA device.*--device cpu"):
        resolve_device("cuda")
    assert resolve_device("auto").type == "cpu"
    with pytest.raises(DeviceError, match="unknown device 'tpu'"):
        resolve_device("tpu")


@pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device here: the CUDA training path runs in benches/gpu_check.sh")
def test_training_runs_on_cuda(tmp_path):
    summary = train("ppo", "cartpole", timesteps=1024, device="cuda", run_dir=tmp_path, **QUIET)
    assert summary["device"].startswith("cuda")


@pytest.mark.filterwarnings("ignore:Detected pickle protocol")
def test_bad_checkpoints_are_refused_without_running_their_code(tmp_path):
    run = tmp_path / "run"
    train("ppo", "bandit", timesteps=256, run_dir=run, device="cpu", eval_episodes=1, **QUIET)
    ckpt = run / "last.pt"
    data = ckpt.read_bytes()
    ckpt.write_bytes(data[: len(data) // 2])
    with pytest.raises(CheckpointError, match="not a readable Thrust checkpoint"):
        resume(run, **QUIET)
    torch.save({"weights": torch.zeros(2)}, ckpt)
    with pytest.raises(CheckpointError, match="not a Thrust checkpoint"):
        resume(run, **QUIET)
    marker = tmp_path / "pwned"
    ckpt.write_bytes(pickle.dumps(Exploit(str(marker))))
    with pytest.raises(CheckpointError):
        resume(run, **QUIET)
    assert not marker.exists()
    with pytest.raises(RunDirError, match="not a Thrust run folder"):
        resume(tmp_path / "nowhere", **QUIET)


class Exploit:
    def __init__(self, path: str) -> None:
        self.path = path

    def __reduce__(self):
        return (open, (self.path, "w"))


def test_a_run_folder_is_never_overwritten(tmp_path):
    train("ppo", "bandit", timesteps=256, run_dir=tmp_path, device="cpu", eval_episodes=1, **QUIET)
    with pytest.raises(RunDirError, match="--resume"):
        train("ppo", "bandit", timesteps=256, run_dir=tmp_path, **QUIET)


def test_cli_trains_resumes_and_evaluates(tmp_path, capsys):
    run = tmp_path / "cli"
    code = thrust_main(["train", "a2c", "bandit", "--timesteps", "512", "--run-dir", str(run), "--quiet",
                        "--set", "learning_rate=0.003", "--device", "cpu"])
    assert code == 0
    assert "a2c thrust/Bandit-v0: finished after 512 steps" in capsys.readouterr().out
    assert "--set learning_rate=0.003" not in json.loads((run / "config.json").read_text())["command"]  # preset value
    assert thrust_main(["train", "--resume", str(run), "--timesteps", "1024", "--quiet"]) == 0
    assert "finished after 1,024 steps" in capsys.readouterr().out
    assert thrust_main(["eval", str(run), "--episodes", "4"]) == 0
    assert "mean return" in capsys.readouterr().out
    assert thrust_main(["train", "dqn", "pendulum"]) == 2
    assert "dqn needs a Discrete action space" in capsys.readouterr().err


def test_registry_lists_the_four_algorithms():
    assert list(ALGOS) == ["a2c", "ppo", "dqn", "sac"]


def reference_losses(algo, net, obs, actions, old_log_probs, adv, ret, config):
    """PPO's and A2C's losses written the plain autograd way (SB3's formulas), as the reference."""
    dist, values = net.dist_and_value(obs)
    log_prob, entropy = net.log_prob(dist, actions), net.entropy(dist).mean()
    if config.normalize_advantage:
        adv = (adv - adv.mean()) / (adv.std() + 1e-8)
    if algo == "ppo":
        ratio = (log_prob - old_log_probs).exp()
        policy_loss = -torch.min(adv * ratio, adv * ratio.clamp(0.8, 1.2)).mean()
    else:
        policy_loss = -(adv * log_prob).mean()
    value_loss = torch.nn.functional.mse_loss(values, ret)
    return policy_loss, value_loss, entropy, policy_loss + config.vf_coef * value_loss - config.ent_coef * entropy


@pytest.mark.parametrize("algo, hidden, activation, space", [
    ("ppo", (64, 64), "tanh", "discrete"), ("ppo", (32,), "relu", "discrete"), ("ppo", (16, 24, 8), "tanh", "box"),
    ("a2c", (64, 64), "relu", "box"), ("a2c", (64, 64), "tanh", "discrete"), ("ppo", (), "relu", "image"),
])
def test_written_out_gradients_equal_autograds(algo, hidden, activation, space):
    """ActorCritic.backward with PPO's / A2C's written-out loss gradients against autograd on the plain loss."""
    from thrust_app.algos.a2c import A2CConfig, a2c_loss
    from thrust_app.algos.ppo import PPOConfig, ppo_loss
    from thrust_app.envs.core import Box, Discrete
    from thrust_app.nets import ActorCritic

    action_space = Box((-2.0, -1.0), (2.0, 1.0), (2,)) if space == "box" else Discrete(3)
    obs_shape = (3, 5, 5) if space == "image" else (5,)
    torch.manual_seed(0)
    net = ActorCritic(obs_shape, action_space, hidden or (64,), activation)
    g = torch.Generator().manual_seed(0)
    obs = torch.randn(64, *obs_shape, generator=g) * 2
    actions = torch.randn(64, 2, generator=g) if space == "box" else torch.randint(0, 3, (64,), generator=g)
    old_log_probs = torch.randn(64, generator=g) * 0.3 - 1.0
    adv, ret = torch.randn(64, generator=g), torch.randn(64, generator=g)
    if algo == "ppo":
        config = PPOConfig(ent_coef=0.01, vf_coef=0.7)
        loss_fn = lambda lp, ent, v: ppo_loss(lp, ent, v, old_log_probs, adv, ret, 0.2, config)  # noqa: E731
    else:
        config = A2CConfig(ent_coef=0.01, vf_coef=0.7, normalize_advantage=True)
        loss_fn = lambda lp, ent, v: a2c_loss(lp, ent, v, adv, ret, config)  # noqa: E731

    *want_losses, total = reference_losses(algo, net, obs, actions, old_log_probs, adv, ret, config)
    total.backward()
    want = {name: p.grad.clone() for name, p in net.named_parameters()}
    got_losses = net.backward(obs, actions, loss_fn)
    for got, expected in zip(got_losses, want_losses):
        torch.testing.assert_close(got, expected.detach(), atol=1e-6, rtol=1e-5)
    for name, p in net.named_parameters():
        assert p.grad is not None and p.grad.abs().sum() > 0, name
        torch.testing.assert_close(p.grad, want[name], atol=2e-6, rtol=1e-4, msg=name)


def test_rollout_sampling_draws_from_the_policy():
    """The Gumbel-max sampler behind rollouts: frequencies match the softmax, log-probs match Categorical."""
    from thrust_app.envs.core import Discrete
    from thrust_app.nets import ActorCritic

    torch.manual_seed(0)
    net = ActorCritic((4,), Discrete(3))
    with torch.no_grad():
        net.pi_head.bias.copy_(torch.tensor([0.0, 1.0, -1.0]))
    obs = torch.zeros(20_000, 4)
    actions, log_probs, values = net.sample(obs)
    dist, want_values = net.dist_and_value(obs)
    freq = torch.bincount(actions, minlength=3) / actions.shape[0]
    torch.testing.assert_close(freq, dist.probs[0].detach(), atol=0.015, rtol=0)
    torch.testing.assert_close(log_probs, dist.log_prob(actions).detach(), atol=1e-5, rtol=0)
    torch.testing.assert_close(values, want_values.detach(), atol=1e-5, rtol=0)
