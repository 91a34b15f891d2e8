"""Training: every algorithm learns the bandit, every algo x env pair runs, runs are complete on disk,
a resumed run equals an uninterrupted one, and bad input is refused with a clear message."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch

from thrust_app.algos import ALGOS, ActionSpaceError
from thrust_app.algos.base import deterministic_action
from thrust_app.envs.core import UnknownEnvError
from thrust_app.runs.files import RunDirError, load_checkpoint, read_jsonl
from thrust_app.training.evaluation import evaluate
from thrust_app.training.trainer import Every, load_policy, resume, train

QUIET = {"progress": False, "log": lambda _: None}
SUMMARY_KEYS = {
    "algo",
    "env",
    "seed",
    "device",
    "timesteps",
    "wall_s",
    "sps",
    "eval_mean",
    "eval_std",
    "solved_at_step",
    "solved_at_s",
}


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
    ("a2c", "cartpole", {}),
    ("a2c", "pendulum", {}),
    ("a2c", "snake", {"n_envs": 2}),
    ("ppo", "cartpole", {}),
    ("ppo", "pendulum", {"n_steps": 64}),
    ("ppo", "snake", {"n_envs": 2, "n_steps": 32}),
    ("dqn", "cartpole", {"learning_starts": 100, "train_freq": 16, "gradient_steps": 4, "hidden": "64,64"}),
    ("dqn", "snake", {"learning_starts": 100, "buffer_size": 1000}),
    ("sac", "pendulum", {"learning_starts": 100, "hidden": "32,32"}),
    ("td3", "pendulum", {"learning_starts": 100, "hidden": "32,32"}),
    ("ddpg", "MountainCarContinuous-v0", {"learning_starts": 50, "hidden": "16,16", "noise_type": "ornstein-uhlenbeck"}),
    ("ppo", "CartPole-v1", {}),  # gymnasium's own envs train too
    ("sac", "MountainCarContinuous-v0", {"learning_starts": 50, "hidden": "16,16"}),
    ("dqn", "Acrobot-v1", {"learning_starts": 50, "train_freq": 8}),
    ("ppo", "HalfCheetah-v5", {"n_steps": 64, "batch_size": 32}),  # MuJoCo, the zoo's preset: normalised
    ("recurrent_ppo", "PendulumNoVel-v1", {"n_steps": 64}),  # the zoo's memory test, its preset
    ("recurrent_ppo", "snake", {"n_envs": 2, "n_steps": 32, "rnn_type": "gru", "critic_rnn": "shared"}),  # CNN + GRU
    ("td3", "Hopper-v5", {"learning_starts": 100, "hidden": "32,32"}),
]


@pytest.mark.parametrize("algo, env, overrides", SMOKE, ids=[f"{a}-{e}" for a, e, _ in SMOKE])
def test_every_algo_env_pair_trains_and_leaves_a_complete_run(algo, env, overrides, tmp_path):
    summary = train(
        algo, env, timesteps=600, seed=0, device="cpu", run_dir=tmp_path, eval_episodes=2, overrides=overrides, **QUIET
    )
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


@pytest.mark.parametrize(
    "algo, env, overrides",
    [
        ("ppo", "cartpole", {"n_steps": 16}),
        ("ppo", "pendulum", {"n_steps": 16, "normalize": True}),
        ("ppo", "pendulum", {"n_steps": 16, "use_sde": True, "sde_sample_freq": 4}),  # gSDE's weights: drawn anew
        (
            "dqn",
            "cartpole",
            {"learning_starts": 200, "train_freq": 8, "gradient_steps": 2, "hidden": "64,64", "target_update_interval": 100},
        ),
        ("sac", "pendulum", {"learning_starts": 100, "hidden": "32,32"}),
        (
            "dqn",
            "cartpole",
            {"learning_starts": 200, "train_freq": 8, "gradient_steps": 2, "hidden": "64,64", "update": "numba"},
        ),
        ("sac", "pendulum", {"learning_starts": 100, "hidden": "32,32", "update": "numba"}),
        # the buffer keeps the env's own observations: the one a restored episode goes on from comes back too
        ("sac", "pendulum", {"learning_starts": 100, "hidden": "32,32", "normalize": True}),
        ("td3", "pendulum", {"learning_starts": 100, "hidden": "32,32", "noise_type": "ornstein-uhlenbeck"}),
        # the envs' memories travel in the checkpoint: the resumed run goes on mid-episode as it was
        ("recurrent_ppo", "cartpole-novel", {"n_steps": 16, "n_envs": 4, "lstm_hidden_size": 16, "normalize": True}),
    ],
)
def test_resumed_run_equals_uninterrupted_run(algo, env, overrides, tmp_path):
    kwargs = dict(
        timesteps=2400,
        seed=3,
        device="cpu",
        eval_every=600,
        eval_episodes=2,
        overrides=overrides,
        checkpoint_every=10**9,
        **QUIET,
    )
    whole = train(algo, env, run_dir=tmp_path / "whole", **kwargs)
    calls = iter(range(10**6))
    stop_after_eight = lambda trainer: trainer.request_stop() if next(calls) >= 7 else None  # noqa: E731
    stopped = train(algo, env, run_dir=tmp_path / "split", on_iteration=stop_after_eight, **kwargs)
    assert stopped["status"] == "stopped" and stopped["timesteps"] < 2400
    resumed = resume(tmp_path / "split", **QUIET)
    assert resumed["status"] == "finished"
    assert comparable(read_jsonl(tmp_path / "split" / "metrics.jsonl")) == comparable(
        read_jsonl(tmp_path / "whole" / "metrics.jsonl")
    )
    assert resumed["eval_mean"] == whole["eval_mean"]


def test_same_seed_gives_the_same_metrics(tmp_path):
    runs = [
        train(
            "ppo",
            "pendulum",
            timesteps=1024,
            seed=5,
            device="cpu",
            run_dir=tmp_path / str(i),
            overrides={"n_steps": 64},
            eval_episodes=2,
            **QUIET,
        )
        for i in range(2)
    ]
    assert comparable(read_jsonl(tmp_path / "0" / "metrics.jsonl")) == comparable(read_jsonl(tmp_path / "1" / "metrics.jsonl"))
    assert runs[0]["eval_mean"] == runs[1]["eval_mean"]


def test_stop_at_return_stops_once_an_evaluation_reaches_it(tmp_path):
    summary = train(
        "ppo", "bandit", timesteps=50_000, seed=0, device="cpu", run_dir=tmp_path, eval_every=512, stop_at_return=0.9, **QUIET
    )
    assert summary["status"] == "solved" and summary["timesteps"] < 50_000
    assert summary["eval_mean"] >= 0.9 and summary["solved_at_step"] == summary["timesteps"]


def test_algorithm_and_env_mismatches_are_refused():
    with pytest.raises(
        ActionSpaceError, match=r"dqn needs a Discrete action space.*sac, td3, ddpg, ppo, recurrent_ppo or a2c"
    ):
        train("dqn", "pendulum", **QUIET)
    with pytest.raises(ActionSpaceError, match="sac needs a Box action space"):
        train("sac", "cartpole", **QUIET)
    with pytest.raises(UnknownEnvError, match="valid Thrust names"):
        train("ppo", "cartpool", **QUIET)
    with pytest.raises(ValueError, match="choose one of a2c, ppo, recurrent_ppo, dqn, sac"):
        train("trpo", "cartpole", **QUIET)


def test_a_run_folder_is_never_overwritten(tmp_path):
    train("ppo", "bandit", timesteps=256, run_dir=tmp_path, device="cpu", eval_episodes=1, **QUIET)
    with pytest.raises(RunDirError, match="--resume"):
        train("ppo", "bandit", timesteps=256, run_dir=tmp_path, **QUIET)


def test_registry_lists_every_algorithm():
    assert list(ALGOS) == ["a2c", "ppo", "recurrent_ppo", "dqn", "sac", "td3", "ddpg"]


def test_every_fires_once_per_interval_even_when_steps_jump():
    due = Every(100, step=250)
    assert [step for step in (260, 299, 300, 301, 450, 460, 700) if due(step)] == [300, 450, 700]


def test_the_iteration_hook_can_checkpoint_to_a_path_and_stop(tmp_path):
    seen = []

    def hook(trainer):
        seen.append(trainer.step)
        if len(seen) == 3:
            trainer.checkpoint(tmp_path / "elsewhere.pt")
            trainer.request_stop()

    summary = train(
        "ppo",
        "cartpole",
        timesteps=10_000,
        seed=0,
        device="cpu",
        run_dir=tmp_path / "run",
        overrides={"n_steps": 16},
        on_iteration=hook,
        **QUIET,
    )
    assert summary["status"] == "stopped" and summary["timesteps"] == seen[-1] == 3 * 16 * 8
    assert load_checkpoint(tmp_path / "elsewhere.pt")["algo"]["num_timesteps"] == seen[-1]


def test_a_run_ending_on_an_evaluation_step_is_not_evaluated_twice(tmp_path):
    train(
        "ppo",
        "bandit",
        timesteps=512,
        seed=0,
        device="cpu",
        run_dir=tmp_path,
        eval_every=256,
        overrides={"n_steps": 32},
        eval_episodes=2,
        **QUIET,
    )
    eval_steps = [r["step"] for r in read_jsonl(tmp_path / "metrics.jsonl") if r["kind"] == "eval"]
    assert eval_steps == [256, 512]


def test_the_fast_preset_solves_cartpole_and_stops_there(tmp_path):
    summary = train("ppo", "cartpole", seed=2, preset="fast", run_dir=tmp_path / "fast", progress=False, log=lambda _: None)
    assert summary["status"] == "solved" and summary["eval_mean"] >= 475
    assert summary["timesteps"] == summary["solved_at_step"] < 50_000 and summary["solved_at_train_s"] is not None


def test_resuming_under_a_new_learning_rate_changes_every_optimizer_and_the_config(tmp_path):
    """What a PBT exploit does: continue from a checkpoint (here another run's) with a changed setting."""
    from thrust_app.training.trainer import ResumeFrom

    quiet = {"progress": False, "log": lambda _: None}
    donor = tmp_path / "donor"
    train("sac", "pendulum", timesteps=300, run_dir=donor, overrides={"learning_starts": 100, "batch_size": 32}, **quiet)
    run = tmp_path / "run"
    train("sac", "pendulum", timesteps=200, run_dir=run, overrides={"learning_starts": 100, "batch_size": 32}, **quiet)
    seen: list[list[float]] = []

    def record(trainer) -> None:
        optimizers = [trainer.algo.actor_opt, trainer.algo.critic_opt, trainer.algo.alpha_opt]
        seen.append([group["lr"] for opt in optimizers for group in opt.param_groups])

    start = ResumeFrom(checkpoint=donor / "last.pt", overrides={"learning_rate": 1e-4})
    summary = resume(run, timesteps=400, start=start, on_iteration=record, **quiet)
    assert summary["status"] == "finished" and summary["timesteps"] >= 400
    assert seen and all(rate == pytest.approx(1e-4) for rates in seen for rate in rates)
    config = json.loads((run / "config.json").read_text())
    assert config["config"]["learning_rate"] == 1e-4 and config["overrides"]["learning_rate"] == 1e-4
    steps = [json.loads(line)["step"] for line in (run / "metrics.jsonl").read_text().splitlines()]
    assert steps == sorted(steps) and steps[-1] >= 400  # the records continue from the donor's step (300)


def test_an_env_without_a_time_limit_cannot_evaluate_forever(monkeypatch):
    """CliffWalking has no time limit: a policy that never reaches the goal would evaluate forever."""
    from thrust_app.training import evaluation

    monkeypatch.setattr(evaluation, "UNLIMITED_EPISODE_CAP", 500)
    result = evaluation.evaluate(lambda obs: [0] * len(obs), "CliffWalking-v1", episodes=2)  # always up: never done
    assert result.lengths == [500, 500]
