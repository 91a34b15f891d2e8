"""Configs: every value is parsed to its field's type and checked against the range the field declares,
before any run folder exists; a bad one is refused naming the problem."""

from __future__ import annotations

import gymnasium
import pytest
import torch

from thrust_app.algos import ALGOS
from thrust_app.config import ConfigError, apply_overrides
from thrust_app.training.run_spec import make_spec, solve_threshold
from thrust_app.training.trainer import train

QUIET = {"progress": False, "log": lambda _: None}


@pytest.mark.parametrize(
    "overrides, message",
    [
        (["lerning_rate=0.1"], "did you mean 'learning_rate'"),
        (["n_steps=abc"], "n_steps: cannot read 'abc'; expected an integer"),
        (["n_steps=0"], "n_steps must be >= 1"),
        (["gamma=1.5"], r"gamma must be in \[0, 1\]"),
        (["activation=sigmoid"], "not one of tanh, relu"),
        (["learning_rate=inf"], "learning_rate must be a finite number, got inf"),
        (["clip_range=nan"], "clip_range must be a finite number"),
        (["clip_range=-1"], "clip_range must be > 0"),
        (["gae_lambda=1.5"], r"gae_lambda must be in \[0, 1\]"),
        (["max_grad_norm=-1"], "max_grad_norm must be > 0"),
        (["update=magic"], "not one of handwritten, numba, reference"),
        (["learning_rate"], "expects key=value"),
    ],
)
def test_bad_config_is_refused_naming_the_problem(overrides, message, tmp_path):
    with pytest.raises(ConfigError, match=message):
        train("ppo", "cartpole", run_dir=tmp_path, overrides=overrides, **QUIET)
    assert not (tmp_path / "config.json").exists()


@pytest.mark.parametrize(
    "algo, key, value, message",
    [
        ("sac", "tau", "5", r"tau must be in \(0, 1\]"),
        ("sac", "tau", "nan", "tau must be a finite number"),
        ("dqn", "exploration_fraction", "0", r"exploration_fraction must be in \(0, 1\]"),
        ("dqn", "loss", "l1", "not one of huber, mse"),
        ("a2c", "ent_coef", "-0.1", "ent_coef must be >= 0"),
    ],
)
def test_each_field_is_checked_against_its_own_range(algo, key, value, message):
    config_cls = ALGOS[algo].Config
    with pytest.raises(ConfigError, match=message):
        apply_overrides(config_cls(), [f"{key}={value}"], algo)


def test_every_default_config_is_valid():
    for algo_cls in ALGOS.values():
        algo_cls.Config().validate()


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"eval_every": 0}, "eval_every must be >= 1"),
        ({"checkpoint_every": -5}, "checkpoint_every must be >= 1"),
        ({"timesteps": 0}, "timesteps must be >= 1"),
    ],
)
def test_bad_intervals_are_refused_before_a_folder_exists(kwargs, message, tmp_path):
    with pytest.raises(ConfigError, match=message):
        train("ppo", "cartpole", run_dir=tmp_path / "run", **kwargs, **QUIET)
    assert not (tmp_path / "run").exists()


def test_a_named_preset_sets_its_settings_evaluation_and_stop_and_the_command_repeats_it():
    spec = make_spec("ppo", "cartpole", preset="fast")
    assert (spec.config["n_envs"], spec.config["n_steps"], spec.eval_every, spec.stop_at_return) == (8, 32, 1024, 475.0)
    assert spec.overrides == {} and "--preset fast" in spec.command()
    mine = make_spec("ppo", "cartpole", preset="fast", eval_every=2048, overrides={"n_epochs": 5})
    assert mine.eval_every == 2048 and mine.overrides == {"n_epochs": 5}  # the user's values win
    assert make_spec("ppo", "cartpole").config["n_envs"] == 8 and "--preset" not in make_spec("ppo", "cartpole").command()


def test_the_gpu_preset_puts_the_envs_on_the_device_unless_the_user_says_otherwise():
    from thrust_app.training.run_spec import make_spec

    spec = make_spec("ppo", "cartpole", preset="gpu")
    assert (spec.env_backend, spec.config["n_envs"], spec.config["cuda_graphs"]) == ("torch", 4096, True)
    assert "--env-backend" not in spec.command()  # the preset's own choice needs no repeating
    assert make_spec("ppo", "cartpole", preset="gpu", env_backend="numpy").env_backend == "numpy"
    assert make_spec("ppo", "cartpole").env_backend == "numpy"


@pytest.mark.skipif(torch.cuda.is_available(), reason="this machine has CUDA: the preset would capture graphs")
def test_the_gpu_preset_runs_on_a_cpu_with_one_note_that_its_graphs_are_unavailable(tmp_path):
    lines: list[str] = []
    summary = train(
        "ppo",
        "cartpole",
        preset="gpu",
        timesteps=2 * 65_536,
        device="cpu",
        run_dir=tmp_path / "run",
        progress=False,
        log=lines.append,
    )
    assert summary["status"] in ("finished", "solved") and summary["timesteps"] == 2 * 65_536
    assert len([line for line in lines if "cuda_graphs" in line]) == 1, lines


def test_the_command_repeats_every_choice_that_differs_from_the_presets():
    from thrust_app.training.run_spec import make_spec

    spec = make_spec("ppo", "cartpole", device="cpu", env_backend="torch", eval_every=2048, eval_episodes=3)
    words = spec.command().split()
    for flag, value in [("--device", "cpu"), ("--env-backend", "torch"), ("--eval-every", "2048"), ("--eval-episodes", "3")]:
        assert words[words.index(flag) + 1] == value
    plain = make_spec("ppo", "cartpole").command()
    assert not any(flag in plain for flag in ("--device", "--env-backend", "--eval-every", "--eval-episodes"))


def test_an_unknown_preset_is_one_line_naming_the_presets_there():
    from thrust_app.training.run_spec import make_spec

    with pytest.raises(ConfigError, match=r"no preset 'fast' for sac on thrust/Pendulum-v0; its presets: default"):
        make_spec("sac", "pendulum", preset="fast")


def test_the_speed_settings_read_under_their_earlier_names():
    """Saved configs, sweep files and `--set` from before the renaming (backward=fast|compiled|autograd,
    acting=fast) mean what they meant."""
    earlier = make_spec("dqn", "cartpole", overrides={"backward": "compiled", "acting": "fast"}).config
    assert earlier["update"] == "numba" and earlier["acting"] == "numpy" and "backward" not in earlier
    assert make_spec("ppo", "cartpole", overrides=["backward=autograd"]).config["update"] == "reference"
    assert make_spec("ppo", "cartpole", overrides={"backward": "compiled"}).config["update"] == "numba"


def test_gsde_settings_are_checked_in_one_line():
    from thrust_app.algos import PPOConfig

    with pytest.raises(ConfigError, match=r"sde_sample_freq must be -1 \(once per rollout\) or >= 1, got 0"):
        apply_overrides(PPOConfig(), {"use_sde": True, "sde_sample_freq": 0}, "ppo")
    with pytest.raises(ConfigError, match="sde_sample_freq must be >= -1"):
        apply_overrides(PPOConfig(), {"sde_sample_freq": -2}, "ppo")


@pytest.mark.parametrize(
    ("core", "gymnasium_id"),
    [
        ("thrust/CartPole-v0", "CartPole-v1"),
        ("thrust/Acrobot-v0", "Acrobot-v1"),
        ("thrust/MountainCar-v0", "MountainCar-v0"),
        ("thrust/MountainCarContinuous-v0", "MountainCarContinuous-v0"),
    ],
)
def test_a_core_equal_to_a_gymnasium_env_counts_as_solved_where_gymnasium_does(core, gymnasium_id):
    """The stop-when-solved line (the trainer, the dashboard, the tab's Train mode) is gymnasium's reward_threshold."""
    assert solve_threshold(core) == gymnasium.spec(gymnasium_id).reward_threshold is not None
