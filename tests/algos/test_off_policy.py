"""DQN's, SAC's, TD3's and DDPG's learning steps against Stable-Baselines3's on the same work: Thrust's nets take
an SB3 model's weights and both learn from one minibatch of SB3's replay buffer, drawing their noise (SAC's
actions, TD3's target smoothing) from one random stream; the weights they end with must agree. Pendulum's
actions are bounded by +-2: both libraries' critics read them in [-1, 1]. DQN also on a board, through the CNN
the MinAtar parity row trains on both sides. And whole runs of DQN, TD3 and DDPG against SB3's: when each acts,
learns, moves its targets and reads its schedules."""

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


#: algorithm: (env, initial learning rate, its settings beside the whole run's): DQN greedy after the warm-up
#: (epsilon 0) with a soft target copy every 50 steps; TD3 and DDPG without exploration noise, three critic steps a
#: phase so that TD3's delayed actor steps fall across phases; SAC acting on its policy's draws, its temperature
#: learned; DQN also on MinAtar's board through the CNN its parity row trains. Their rate is lower: at 3e-3, DDPG's
#: two runs part from float rounding alone (actions equal to 1e-7 at step 172, 3e-5 at 196, 3e-2 at 292), as chaos
#: does
WHOLE_RUNS = {
    "sac": ("Pendulum-v1", 1e-3, {"tau": 0.05, "gradient_steps": 3}),
    "dqn": ("CartPole-v1", 3e-3, {"target_update_interval": 50, "tau": 0.5, "max_grad_norm": 10.0, "gradient_steps": 2}),
    "td3": ("Pendulum-v1", 1e-3, {"tau": 0.05, "gradient_steps": 3, "target_policy_noise": 0.2, "target_noise_clip": 0.5}),
    "ddpg": ("Pendulum-v1", 1e-3, {"tau": 0.05, "gradient_steps": 3}),
    "dqn-board": ("thrust/MinAtarBreakout-v0", 3e-3, {"target_update_interval": 50, "tau": 0.5, "max_grad_norm": 10.0}),
}


@pytest.mark.parametrize("case", list(WHOLE_RUNS))
def test_a_run_acts_updates_and_moves_its_targets_when_sb3s_does(case):
    """A whole run against SB3's from the same weights and env seeds, the learning rate falling linearly: Thrust
    replays SB3's warm-up actions and the replay rows SB3 sampled, draws its noise (SAC's actions, TD3's target
    smoothing) from SB3's random stream, and acts without exploration noise after the warm-up (DQN, TD3, DDPG; SAC
    draws its actions from its policy, from that stream, as SB3 does). Then each action, which depends on every
    earlier update, learning rate and target move, must be SB3's; Thrust must learn from exactly SB3's minibatches,
    no more (SB3 first learns once more than learning_starts steps are collected) and no fewer; and the nets must
    end equal (with the learning rate read where SB3 reads it, after collecting). Pendulum's episodes are cut by
    its time limit at 200 steps, inside the run."""
    import stable_baselines3 as sb3
    from stable_baselines3.common.env_util import make_vec_env

    from thrust_app.envs.batched import make_batched
    from thrust_app.envs.gym_adapter import register_envs
    from thrust_app.envs.pipeline import Pipeline
    from thrust_app.envs.tensors import EnvIO

    register_envs()
    algo_name, board = case.split("-")[0], case.endswith("board")
    env_id, learning_rate, own = WHOLE_RUNS[case]
    steps = 400  # learning from step 100, a multiple of train_freq
    settings = {"learning_starts": 100, "train_freq": 4, "batch_size": 16, "buffer_size": 1_000, "gamma": 0.99} | own
    if algo_name == "dqn":
        settings |= {"exploration_initial_eps": 0.0, "exploration_final_eps": 0.0}
    model_class = {"dqn": sb3.DQN, "td3": sb3.TD3, "ddpg": sb3.DDPG, "sac": sb3.SAC}[algo_name]
    layers = {"features_extractor_class": thrust_cnn_extractor(), "net_arch": []} if board else {"net_arch": [64, 64]}
    net = {"learning_rate": lambda progress: learning_rate * progress, "policy_kwargs": layers}
    model = model_class("MlpPolicy", make_vec_env(env_id, n_envs=1, seed=0), seed=0, device="cpu", **settings, **net)
    initial = {name: weight.clone() for name, weight in model.policy.state_dict().items()}
    sampled: list[np.ndarray] = []
    get_samples = model.replay_buffer._get_samples
    model.replay_buffer._get_samples = lambda rows, env=None: sampled.append(rows.copy()) or get_samples(rows, env)
    torch.manual_seed(7)
    noise_stream = torch.get_rng_state()  # SB3 draws SAC's actions and TD3's smoothing from torch's global stream
    model.learn(steps)

    config = settings | {"learning_rate": learning_rate, "lr_schedule": "linear", "hidden": [64, 64], "update": "reference"}
    algo = build_algorithm(
        algo_name, env_id, config | ({"noise_type": "none"} if algo_name in ("td3", "ddpg") else {}), "cpu", 0
    )
    algo.total_timesteps = steps
    algo.generator.set_state(noise_stream)  # TD3's smoothing noise
    torch.set_rng_state(noise_stream)  # SAC's draws
    weights = (lambda: board_q_weights(algo)) if board else (lambda: sb3_weights(algo_name, algo))
    with torch.no_grad():
        for name, weight in weights():
            weight.copy_(initial[name])
    if algo_name == "dqn":
        sb3_actions = torch.as_tensor(model.replay_buffer.actions[:steps, 0, 0]).long()
    else:  # SB3 keeps Box actions in [-1, 1], Thrust in the env's units
        sb3_actions = algo.policy.scale(torch.as_tensor(model.replay_buffer.actions[:steps, 0]))
    algo.random_actions = lambda n, mask=None: sb3_actions[algo.num_timesteps : algo.num_timesteps + n]
    minibatches = iter(sampled)

    def sb3s_rows(size: int, generator=None):
        rows = next(minibatches, None)
        assert rows is not None, f"Thrust learns a minibatch more than SB3's {len(sampled)} at step {algo.num_timesteps}"
        return algo.buffer.sample_rows(torch.as_tensor(rows))

    algo.buffer.sample = sb3s_rows
    vec_env = make_batched(env_id, 1, seed=0, pipeline=Pipeline(), check_actions=False)
    env_io = EnvIO(torch.device("cpu"))
    obs = env_io.reset(vec_env)
    while algo.num_timesteps < steps:  # the trainer's loop (training/trainer.py)
        algo.apply_schedules(learning_progress(algo, 1, steps))
        obs = algo.iteration(vec_env, env_io, obs).obs
    vec_env.close()

    assert next(minibatches, None) is None  # every one of SB3's minibatches learned from
    if algo_name == "dqn":
        assert torch.equal(algo.buffer.actions[:steps], sb3_actions)  # the greedy actions of steps 100 to 399 too
        assert len(set(sb3_actions[100:].tolist())) >= 2  # several actions chosen: the greedy policy changed as it learned
    else:
        torch.testing.assert_close(algo.buffer.actions[:steps], sb3_actions, atol=1e-4, rtol=1e-4)
    sb3_obs = torch.as_tensor(model.replay_buffer.observations[:steps, 0])
    torch.testing.assert_close(algo.buffer.obs[:steps], sb3_obs, atol=1e-4, rtol=1e-4)
    learned = model.policy.state_dict()
    for name, weight in weights():
        torch.testing.assert_close(weight, learned[name], atol=2e-6, rtol=0, msg=lambda m, n=name: f"{n}: {m}")
    if algo_name == "sac":
        torch.testing.assert_close(algo.log_alpha.detach(), model.log_ent_coef.detach(), atol=1e-6, rtol=1e-5)
    assert max(float((learned[name] - initial[name]).abs().max()) for name in initial) > 1e-2  # both learned
