"""DQN's, SAC's, TD3's and DDPG's learning steps against Stable-Baselines3's on the same work: Thrust's nets take
an SB3 model's weights and both learn from one minibatch of SB3's replay buffer, drawing their noise (SAC's
actions, TD3's target smoothing) from one random stream; the weights they end with must agree. Pendulum's
actions are bounded by +-2: both libraries' critics read them in [-1, 1]. DQN also on a board, through the CNN
the MinAtar parity row trains on both sides."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from thrust_app.algos import build_algorithm
from thrust_app.interop.sb3_export import board_q_weights, sb3_weights, thrust_cnn_extractor
from thrust_app.training.trainer import learning_progress

STEPS, BATCH = 4, 64
SETTINGS = {"batch_size": BATCH, "learning_rate": 1e-3, "gamma": 0.99, "tau": 0.01}
#: algorithm: (env, its settings beside SETTINGS)
CASES = {
    "sac": ("Pendulum-v1", {}),
    "td3": ("Pendulum-v1", {"target_policy_noise": 0.2, "target_noise_clip": 0.5, "policy_delay": 2}),
    "ddpg": ("Pendulum-v1", {}),
    "dqn": ("CartPole-v1", {"max_grad_norm": 10.0}),
}


def sb3_model_with_a_full_buffer(algo: str, env_id: str, settings: dict, net: dict | None = None):
    """An SB3 model whose replay buffer holds 300 steps of its warm-up (random actions, no update yet)."""
    import stable_baselines3 as sb3
    from stable_baselines3.common.env_util import make_vec_env

    model_class = {"sac": sb3.SAC, "td3": sb3.TD3, "ddpg": sb3.DDPG, "dqn": sb3.DQN}[algo]
    env = make_vec_env(env_id, n_envs=1, seed=0)
    kwargs = {"policy_kwargs": net or {"net_arch": [64, 64]}, "learning_starts": 10_000}
    model = model_class("MlpPolicy", env, seed=0, device="cpu", **kwargs, **settings)
    model.learn(300)
    return model


@pytest.mark.parametrize("algo_name", list(CASES))
def test_learning_steps_equal_sb3s_on_the_same_minibatch_and_noise(algo_name):
    env_id, settings = CASES[algo_name]
    settings = SETTINGS | settings
    model = sb3_model_with_a_full_buffer(algo_name, env_id, settings)
    batch = model.replay_buffer.sample(BATCH)
    model.replay_buffer.sample = lambda *args, **kwargs: batch  # every gradient step learns from this minibatch
    config = settings | {"hidden": [64, 64], "update": "reference"}
    algo = build_algorithm(algo_name, env_id, config, torch.device("cpu"), 0)
    before = {name: weight.clone() for name, weight in model.policy.state_dict().items()}
    with torch.no_grad():
        for name, weight in sb3_weights(algo_name, algo):
            weight.copy_(before[name])
    # SB3 keeps continuous actions in [-1, 1] in its buffer, Thrust in the env's units
    actions = batch.actions.flatten() if algo_name == "dqn" else algo.policy.scale(batch.actions)
    minibatch = (batch.observations, actions, batch.rewards.flatten(), batch.next_observations, batch.dones.flatten())

    torch.manual_seed(7)
    model.train(gradient_steps=STEPS, batch_size=BATCH)
    torch.manual_seed(7)
    if hasattr(algo, "noise"):  # TD3's smoothing noise comes from the algorithm's generator: SB3's stream
        algo.generator.set_state(torch.default_generator.get_state())
    for _ in range(STEPS):
        algo.update(minibatch)

    learned = model.policy.state_dict()
    for name, weight in sb3_weights(algo_name, algo):
        torch.testing.assert_close(weight, learned[name], atol=1e-6, rtol=1e-5, msg=lambda m, n=name: f"{n}: {m}")
    if algo_name == "sac":
        torch.testing.assert_close(algo.log_alpha.detach(), model.log_ent_coef.detach())
    assert max(float((learned[name] - before[name]).abs().max()) for name in before) > 1e-4  # both learned


def test_dqns_learning_step_through_the_board_cnn_equals_sb3s():
    # DQN on a board (the MinAtar parity row's network): SB3's DQN on Thrust's CNN as its features extractor, the
    # head straight on its features; both learn from one minibatch with the MinAtar preset's lr and clip
    from thrust_app.envs.gym_adapter import register_envs

    register_envs()
    env_id, settings = "thrust/MinAtarBreakout-v0", {"batch_size": 32, "learning_rate": 2.5e-4, "max_grad_norm": 10.0}
    net = {"features_extractor_class": thrust_cnn_extractor(), "net_arch": []}
    model = sb3_model_with_a_full_buffer("dqn", env_id, settings | {"gamma": 0.99}, net)
    batch = model.replay_buffer.sample(32)
    model.replay_buffer.sample = lambda *args, **kwargs: batch
    algo = build_algorithm("dqn", env_id, settings | {"gamma": 0.99, "update": "reference"}, torch.device("cpu"), 0)
    before = {name: weight.clone() for name, weight in model.policy.state_dict().items()}
    with torch.no_grad():
        for name, weight in board_q_weights(algo):
            weight.copy_(before[name])
    minibatch = (
        batch.observations,
        batch.actions.flatten(),
        batch.rewards.flatten(),
        batch.next_observations,
        batch.dones.flatten(),
    )

    model.train(gradient_steps=STEPS, batch_size=32)
    for _ in range(STEPS):
        algo.update(minibatch)
    learned = model.policy.state_dict()
    for name, weight in board_q_weights(algo):
        torch.testing.assert_close(weight, learned[name], atol=1e-6, rtol=1e-5, msg=lambda m, n=name: f"{n}: {m}")
    first_conv = "q_net.features_extractor.encoder.net.0.weight"
    assert float((learned[first_conv] - before[first_conv]).abs().max()) > 1e-5  # the CNN learned


def test_a_dqn_run_acts_copies_its_target_and_learns_when_sb3s_does():
    """A whole DQN run against SB3's on CartPole from the same weights and env seeds, the learning rate falling
    linearly: Thrust replays SB3's warm-up actions and the replay rows SB3 sampled, and acts greedily after the
    warm-up (epsilon 0) on both sides. Then each greedy action, which depends on every earlier update, learning rate
    and target copy, must be SB3's; Thrust must learn from exactly SB3's minibatches, no more (SB3 first learns once
    more than learning_starts steps are collected) and no fewer; and the nets must end equal (with the learning
    rate read at the step the iteration learns at, as SB3 reads it after collecting)."""
    import stable_baselines3 as sb3
    from stable_baselines3.common.env_util import make_vec_env

    from thrust_app.envs.batched import make_batched
    from thrust_app.envs.pipeline import Pipeline
    from thrust_app.envs.tensors import EnvIO

    steps = 400  # learning from step 100 (a multiple of train_freq), a soft target update every 50 steps
    settings = {"learning_starts": 100, "train_freq": 4, "gradient_steps": 2, "target_update_interval": 50}
    settings |= {"tau": 0.5, "batch_size": 16, "buffer_size": 1_000, "max_grad_norm": 10.0}
    settings |= {"exploration_initial_eps": 0.0, "exploration_final_eps": 0.0, "gamma": 0.99}
    env = make_vec_env("CartPole-v1", n_envs=1, seed=0)
    sb3_lr = {"learning_rate": lambda progress_remaining: 3e-3 * progress_remaining, "policy_kwargs": {"net_arch": [64, 64]}}
    model = sb3.DQN("MlpPolicy", env, seed=0, device="cpu", **settings, **sb3_lr)
    initial = {name: weight.clone() for name, weight in model.policy.state_dict().items()}
    sampled: list[np.ndarray] = []
    get_samples = model.replay_buffer._get_samples
    model.replay_buffer._get_samples = lambda rows, env=None: sampled.append(rows.copy()) or get_samples(rows, env)
    model.learn(steps)
    sb3_actions = torch.as_tensor(model.replay_buffer.actions[:steps, 0, 0]).long()

    config = settings | {"learning_rate": 3e-3, "lr_schedule": "linear", "hidden": [64, 64], "update": "reference"}
    algo = build_algorithm("dqn", "CartPole-v1", config, torch.device("cpu"), 0)
    algo.total_timesteps = steps
    with torch.no_grad():
        for name, weight in sb3_weights("dqn", algo):
            weight.copy_(initial[name])
    algo.random_actions = lambda n, mask=None: sb3_actions[algo.num_timesteps : algo.num_timesteps + n]
    minibatches = iter(sampled)

    def sb3s_rows(size: int, generator=None):
        rows = next(minibatches, None)
        assert rows is not None, f"Thrust learns a minibatch more than SB3's {len(sampled)} at step {algo.num_timesteps}"
        return algo.buffer.sample_rows(torch.as_tensor(rows))

    algo.buffer.sample = sb3s_rows
    vec_env = make_batched("CartPole-v1", 1, seed=0, pipeline=Pipeline(), check_actions=False)
    env_io = EnvIO(torch.device("cpu"))
    obs = env_io.reset(vec_env)
    while algo.num_timesteps < steps:  # the trainer's loop (training/trainer.py)
        algo.apply_schedules(learning_progress(algo, 1, steps))
        obs = algo.iteration(vec_env, env_io, obs).obs
    vec_env.close()

    assert next(minibatches, None) is None  # every one of SB3's minibatches learned from
    assert torch.equal(algo.buffer.actions[:steps], sb3_actions)  # the greedy actions of steps 100 to 399 too
    assert len(set(sb3_actions[100:].tolist())) == 2  # both actions chosen: the greedy policy changed as it learned
    torch.testing.assert_close(algo.buffer.obs[:steps], torch.as_tensor(model.replay_buffer.observations[:steps, 0]))
    learned = model.policy.state_dict()
    for name, weight in sb3_weights("dqn", algo):
        torch.testing.assert_close(weight, learned[name], atol=1e-5, rtol=1e-4, msg=lambda m, n=name: f"{n}: {m}")
