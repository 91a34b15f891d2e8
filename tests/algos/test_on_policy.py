"""A2C's and PPO's collection and learning step against Stable-Baselines3's on the same work: SB3 collects a
rollout with its own policy, Thrust's net takes that policy's weights, and

- both learn from the one rollout; GAE, the losses, the gradient clip and the optimizer (PPO's Adam over several
  epochs, A2C's RMSprop) must leave the same weights. The rollout is one minibatch per epoch (batch_size =
  n_steps x n_envs), so the two libraries' minibatch orders (numpy's permutation, torch's) cannot part them:
  what is compared is the update itself;
- Thrust collects its own rollout on its own vec env from the same env seeds, acting SB3's recorded actions:
  the observations, rewards (with the bootstraps of cut episodes), ends, log-probabilities, values and GAE must
  be SB3's, step for step. The draws themselves differ (SB3 samples with torch.multinomial, Thrust by
  Gumbel-max); that both draw from the same distribution is the log-probabilities being equal;
- four iterations in a row, Thrust acting SB3's actions and (PPO) taking SB3's minibatch order, must end with
  SB3's weights, each update reading its schedules where SB3 reads them;
- and each library's own initial weights are drawn alike (the same orthogonal gains layer by layer)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from thrust_app.algos import build_algorithm
from thrust_app.algos.rollout import Rollout, collect_rollout, collect_steps, compute_gae
from thrust_app.envs.batched import make_batched
from thrust_app.envs.pipeline import Pipeline, register_on_demand
from thrust_app.envs.tensors import EnvIO
from thrust_app.interop.sb3_export import actor_critic_weights, shared_cnn_weights, thrust_cnn_extractor
from thrust_app.training.trainer import learning_progress

N_ENVS, N_STEPS = 4, 64

#: (env, Thrust and SB3's shared settings, SB3-only settings): Gaussian, gSDE and categorical actions
CASES = {
    "ppo-pendulum-gsde": ("Pendulum-v1", {"use_sde": True, "sde_sample_freq": 4}, {}),
    "ppo-pendulum": ("Pendulum-v1", {"clip_range_vf": 0.2}, {}),
    "ppo-cartpole": ("CartPole-v1", {}, {}),
    "a2c-pendulum-gsde": ("Pendulum-v1", {"use_sde": True, "sde_sample_freq": 4, "normalize_advantage": True}, {}),
    "a2c-cartpole": ("CartPole-v1", {"gae_lambda": 0.9}, {}),
}
PPO = {"batch_size": N_ENVS * N_STEPS, "n_epochs": 3, "clip_range": 0.2, "learning_rate": 1e-3}
A2C = {"learning_rate": 7e-4}


def sb3_rollout(algo: str, env_id: str, settings: dict, pipeline: Pipeline | None = None, n_steps: int = N_STEPS):
    """SB3's model after collecting one rollout of n_steps x N_ENVS with its initial policy, on `env_id` in
    Thrust's observation `pipeline` as training makes it."""
    import stable_baselines3 as sb3
    from stable_baselines3.common.env_util import make_vec_env

    pipeline = pipeline or Pipeline()
    wrap = lambda env: pipeline.wrap(env, training=True)  # noqa: E731
    env = make_vec_env(env_id, n_envs=N_ENVS, seed=0, env_kwargs=pipeline.make_kwargs(env_id), wrapper_class=wrap)
    model_class = {"ppo": sb3.PPO, "a2c": sb3.A2C}[algo]
    model = model_class("MlpPolicy", env, seed=0, device="cpu", **settings)
    _, callback = model._setup_learn(N_ENVS * n_steps, None)
    callback.on_training_start(locals(), globals())
    model.collect_rollouts(model.env, callback, model.rollout_buffer, n_rollout_steps=n_steps)
    return model


def thrust_rollout(model, net) -> Rollout:
    """SB3's rollout buffer as Thrust's Rollout (dones: an episode ended after step t where SB3 marks step t + 1 as
    an episode's start; the last values are the value of the observation after the rollout)."""
    buffer = model.rollout_buffer
    as_tensor = lambda array: torch.as_tensor(np.asarray(array), dtype=torch.float32)  # noqa: E731
    dones = np.concatenate([buffer.episode_starts[1:], model._last_episode_starts[None]])
    actions = torch.as_tensor(buffer.actions[..., 0]).long() if net.discrete else as_tensor(buffer.actions)
    with torch.no_grad():
        last_values = net.value(as_tensor(model._last_obs)).reshape(-1)
    fields = {"obs": buffer.observations, "log_probs": buffer.log_probs, "values": buffer.values}
    fields |= {"rewards": buffer.rewards, "dones": dones}
    return Rollout(
        actions=actions,
        last_values=last_values,
        episode_returns=[],
        episode_lengths=[],
        **{name: as_tensor(array) for name, array in fields.items()},
    )


@pytest.mark.parametrize("case", list(CASES))
def test_one_update_equals_sb3s_on_sb3s_rollout_and_weights(case):
    algo_name = case.split("-")[0]
    env_id, shared, sb3_only = CASES[case]
    shared = {"n_steps": N_STEPS, "gamma": 0.9, "ent_coef": 0.01, "vf_coef": 0.5, "max_grad_norm": 0.5, **shared}
    shared |= PPO if algo_name == "ppo" else A2C
    model = sb3_rollout(algo_name, env_id, shared | sb3_only)
    config = shared | {"n_envs": N_ENVS, "hidden": [64, 64], "activation": "tanh", "update": "reference"}
    algo = build_algorithm(algo_name, env_id, config, torch.device("cpu"), 0)
    sb3_weights = {name: weight.clone() for name, weight in model.policy.state_dict().items()}  # before it learns
    with torch.no_grad():
        for name, weight in actor_critic_weights(algo.net):
            weight.copy_(sb3_weights[name])
    rollout = thrust_rollout(model, algo.net)
    gae_lambda = model.gae_lambda
    advantages, returns = compute_gae(rollout.rewards, rollout.values, rollout.dones, rollout.last_values, 0.9, gae_lambda)
    torch.testing.assert_close(advantages, torch.as_tensor(model.rollout_buffer.advantages), atol=2e-5, rtol=1e-5)
    torch.testing.assert_close(returns, torch.as_tensor(model.rollout_buffer.returns), atol=2e-5, rtol=1e-5)

    algo.apply_schedules(1.0)
    algo.update(rollout, advantages, returns)
    model.train()
    learned = model.policy.state_dict()
    moved = 0.0
    for name, weight in actor_critic_weights(algo.net):
        torch.testing.assert_close(weight, learned[name], atol=1e-6, rtol=1e-5, msg=lambda m, n=name: f"{n}: {m}")
        moved = max(moved, float((learned[name] - sb3_weights[name]).abs().max()))
    assert moved > 1e-4  # both learned something: the weights left SB3's initial ones


def test_one_update_through_a_shared_cnn_equals_sb3s():
    # PPO on a board: policy and value heads on one CNN, so both losses (and the one gradient clip) reach its weights
    from thrust_app.envs.gym_adapter import register_envs

    register_envs()
    settings = {"n_steps": N_STEPS, "gamma": 0.99, "gae_lambda": 0.95, "ent_coef": 0.01, "vf_coef": 0.5}
    settings |= {"max_grad_norm": 0.5, "batch_size": N_ENVS * N_STEPS, "n_epochs": 3, "clip_range": 0.1}
    settings |= {"learning_rate": 2.5e-4}
    sb3_net = {"features_extractor_class": thrust_cnn_extractor(), "net_arch": [], "activation_fn": torch.nn.ReLU}
    model = sb3_rollout("ppo", "thrust/MinAtarBreakout-v0", settings | {"policy_kwargs": sb3_net})
    config = settings | {"n_envs": N_ENVS, "activation": "relu", "update": "reference"}
    algo = build_algorithm("ppo", "thrust/MinAtarBreakout-v0", config, torch.device("cpu"), 0)
    assert algo.net.uses_cnn
    before = {name: weight.clone() for name, weight in model.policy.state_dict().items()}
    with torch.no_grad():
        for name, weight in shared_cnn_weights(algo.net):
            weight.copy_(before[name])
    rollout = thrust_rollout(model, algo.net)
    advantages, returns = compute_gae(rollout.rewards, rollout.values, rollout.dones, rollout.last_values, 0.99, 0.95)

    algo.apply_schedules(1.0)
    algo.update(rollout, advantages, returns)
    model.train()
    learned = model.policy.state_dict()
    for name, weight in shared_cnn_weights(algo.net):
        torch.testing.assert_close(weight, learned[name], atol=1e-6, rtol=1e-5, msg=lambda m, n=name: f"{n}: {m}")
    first_conv = "features_extractor.encoder.net.0.weight"
    assert float((learned[first_conv] - before[first_conv]).abs().max()) > 1e-4  # the shared CNN learned


class ReplayedActions:
    """Thrust's net acting given actions in turn (SB3's, as its rollout recorded them): what a rollout records of
    each is this net's log-probability and value; everything else is the net's own."""

    def __init__(self, net, actions: torch.Tensor) -> None:
        self.net, self.actions, self.step = net, actions, 0

    def sample(self, obs: torch.Tensor, mask: torch.Tensor | None = None):
        action = self.actions[self.step]
        self.step += 1
        log_prob, _, value = self.net.evaluate_actions(obs, action, mask)
        return action, log_prob, value

    def __getattr__(self, name: str):
        return getattr(self.net, name)


#: (env, Thrust's observation pipeline, steps per env): a board through MinAtar's pipeline (the PPO MinAtar
#: parity row's env), categorical actions on a vector, and Gaussian ones whose episodes are all cut by the
#: time limit at 200 steps, so that the bootstrap of a cut episode is compared too.
COLLECTIONS = {
    "minatar-breakout": ("MinAtar/Breakout-v1", Pipeline("minatar"), 160),
    "cartpole": ("CartPole-v1", Pipeline(), N_STEPS),
    "pendulum-time-limit": ("Pendulum-v1", Pipeline(), 256),
}


@pytest.mark.parametrize("case", list(COLLECTIONS))
def test_a_rollout_equals_sb3s_from_the_same_weights_env_seeds_and_actions(case):
    env_id, pipeline, n_steps = COLLECTIONS[case]
    register_on_demand(env_id)
    settings = {"n_steps": n_steps, "gamma": 0.99, "gae_lambda": 0.95, "batch_size": 64}
    config = settings | {"n_envs": N_ENVS, "env_wrapper": pipeline.wrapper}
    image = pipeline.wrapper == "minatar"
    sb3_net = {"features_extractor_class": thrust_cnn_extractor(), "net_arch": []} if image else {"net_arch": [64, 64]}
    sb3_net["activation_fn"] = torch.nn.ReLU
    model = sb3_rollout("ppo", env_id, settings | {"policy_kwargs": sb3_net}, pipeline, n_steps)
    algo = build_algorithm("ppo", env_id, config | {"activation": "relu", "hidden": [64, 64]}, torch.device("cpu"), 0)
    sb3_weights = model.policy.state_dict()
    with torch.no_grad():
        for name, weight in (shared_cnn_weights if image else actor_critic_weights)(algo.net):
            weight.copy_(sb3_weights[name])
    buffer = model.rollout_buffer
    actions = torch.as_tensor(buffer.actions[..., 0]).long() if algo.net.discrete else torch.as_tensor(buffer.actions)

    env = make_batched(env_id, N_ENVS, seed=0, pipeline=pipeline, check_actions=False)
    env_io = EnvIO(torch.device("cpu"))
    rollout, _ = collect_rollout(env, env_io, env_io.reset(env), ReplayedActions(algo.net, actions), n_steps, 0.99)
    env.close()

    sb3_dones = np.concatenate([buffer.episode_starts[1:], model._last_episode_starts[None]])
    close = lambda ours, theirs, **tol: torch.testing.assert_close(ours, torch.as_tensor(np.asarray(theirs)), **tol)  # noqa: E731
    close(rollout.obs, buffer.observations, atol=0, rtol=0)
    close(rollout.dones, sb3_dones.astype(np.float32), atol=0, rtol=0)
    assert rollout.dones.sum() >= 1  # episodes ended within the rollout, so the resets are compared too
    close(rollout.log_probs, buffer.log_probs, atol=1e-5, rtol=1e-5)
    close(rollout.values, buffer.values, atol=1e-5, rtol=1e-5)
    close(rollout.rewards, buffer.rewards, atol=1e-5, rtol=1e-5)  # a cut episode's reward + gamma V(s_cut)
    advantages, returns = compute_gae(rollout.rewards, rollout.values, rollout.dones, rollout.last_values, 0.99, 0.95)
    close(advantages, buffer.advantages, atol=1e-4, rtol=1e-5)
    close(returns, buffer.returns, atol=1e-4, rtol=1e-5)


#: case: (env, steps per env per rollout, settings beside the run's): categorical actions, Gaussian ones, gSDE, and
#: MinAtar's board through the CNN the PPO MinAtar parity row trains (SB3 on Thrust's CNN). On Pendulum the third
#: rollout of 80 steps per env holds its time-limit cut at 200 (the fourth and last update has none of training
#: left: SB3's linear schedules give it rate 0)
WHOLE_RUNS = {
    "ppo-cartpole": ("CartPole-v1", 32, {}),
    "a2c-cartpole": ("CartPole-v1", 8, {}),
    "ppo-pendulum": ("Pendulum-v1", 80, {}),
    "ppo-pendulum-gsde": ("Pendulum-v1", 80, {"use_sde": True, "sde_sample_freq": 4}),
    "a2c-pendulum-gsde": ("Pendulum-v1", 80, {"use_sde": True, "sde_sample_freq": 4}),
    "ppo-board": ("thrust/MinAtarBreakout-v0", 32, {}),
}


@pytest.mark.parametrize("case", list(WHOLE_RUNS))
def test_a_run_of_several_rollouts_ends_with_sb3s_weights(case, monkeypatch):
    """Four iterations against SB3's from the same weights and env seeds, linear schedules: Thrust acts SB3's
    recorded actions and, for PPO, takes its minibatches in SB3's order (SB3 shuffles env-major flattened steps,
    Thrust step-major: index e * n_steps + t is Thrust's t * n_envs + e), several minibatches per epoch,
    advantages normalised per minibatch. What carries from one rollout to the next (the last observation, the
    episodes under way), the minibatch split, the bootstrap of a cut episode and the schedules must leave SB3's
    weights."""
    import stable_baselines3 as sb3
    from stable_baselines3.common.callbacks import BaseCallback
    from stable_baselines3.common.env_util import make_vec_env

    algo_name, board = case.split("-")[0], case.endswith("board")
    env_id, n_steps, own = WHOLE_RUNS[case]
    register_on_demand(env_id)
    iterations = 4
    timesteps = iterations * n_steps * N_ENVS
    shared = {"n_steps": n_steps, "gamma": 0.99, "gae_lambda": 0.95, "ent_coef": 0.01, "vf_coef": 0.5, "max_grad_norm": 0.5}
    shared |= own | ({"batch_size": 32 if n_steps == 32 else 64, "n_epochs": 3} if algo_name == "ppo" else {})
    linear = {"learning_rate": lambda progress: 1e-3 * progress}
    linear |= {"clip_range": lambda progress: 0.2 * progress} if algo_name == "ppo" else {}
    model_class = {"ppo": sb3.PPO, "a2c": sb3.A2C}[algo_name]
    cnn = {"features_extractor_class": thrust_cnn_extractor(), "net_arch": [], "activation_fn": torch.nn.ReLU}
    linear |= {"policy_kwargs": cnn} if board else {}
    model = model_class("MlpPolicy", make_vec_env(env_id, n_envs=N_ENVS, seed=0), seed=0, **shared, **linear)
    initial = {name: weight.clone() for name, weight in model.policy.state_dict().items()}
    actions: list[torch.Tensor] = []
    discrete = env_id != "Pendulum-v1"

    class Rollouts(BaseCallback):
        def _on_step(self) -> bool:
            return True

        def _on_rollout_end(self) -> None:
            recorded = torch.as_tensor(self.model.rollout_buffer.actions.copy())
            actions.append(recorded[..., 0].long() if discrete else recorded)

    orders: list[torch.Tensor] = []
    permutation = np.random.permutation

    def recorded(n: int) -> np.ndarray:
        order = permutation(n)
        orders.append(torch.as_tensor([(i % n_steps) * N_ENVS + i // n_steps for i in order]))
        return order

    with monkeypatch.context() as patched:
        patched.setattr(np.random, "permutation", recorded)
        model.learn(timesteps, callback=Rollouts())

    activation = "relu" if board else "tanh"
    config = shared | {"n_envs": N_ENVS, "hidden": [64, 64], "activation": activation, "update": "reference"}
    config |= {"learning_rate": 1e-3, "lr_schedule": "linear"}
    config |= {"clip_range": 0.2, "clip_schedule": "linear"} if algo_name == "ppo" else {}
    algo = build_algorithm(algo_name, env_id, config, torch.device("cpu"), 0)
    weights = shared_cnn_weights if board else actor_critic_weights
    with torch.no_grad():
        for name, weight in weights(algo.net):
            weight.copy_(initial[name])
    rollouts = iter(actions)
    algo.collect_steps = lambda inputs: collect_steps(*inputs, ReplayedActions(algo.net, next(rollouts)), n_steps, 0.99)
    sb3_orders = iter(orders)
    monkeypatch.setattr(torch, "randperm", lambda n, **kwargs: next(sb3_orders))
    env = make_batched(env_id, N_ENVS, seed=0, pipeline=Pipeline(), check_actions=False)
    env_io = EnvIO(torch.device("cpu"))
    obs = env_io.reset(env)
    for _ in range(iterations):  # the trainer's loop (training/trainer.py)
        algo.apply_schedules(learning_progress(algo, N_ENVS, timesteps))
        obs = algo.iteration(env, env_io, obs).obs
    env.close()

    assert next(rollouts, None) is None  # each of SB3's rollouts acted
    if algo_name == "ppo":  # (A2C learns from the whole rollout at once: SB3's shuffle changes nothing there)
        assert len(orders) == iterations * 3 and next(sb3_orders, None) is None  # each of SB3's epochs' orders used
        assert n_steps * N_ENVS // shared["batch_size"] >= 4  # several minibatches per epoch
    learned = model.policy.state_dict()
    for name, weight in weights(algo.net):
        torch.testing.assert_close(weight, learned[name], atol=1e-6, rtol=0, msg=lambda m, n=name: f"{n}: {m}")
    assert max(float((learned[name] - initial[name]).abs().max()) for name in initial) > 1e-3  # both learned


@pytest.mark.parametrize("algo_name", ["ppo", "a2c"])
def test_each_update_reads_its_schedules_where_sb3_reads_them(algo_name):
    """SB3 sets the learning rate (and PPO's clip range) after collecting a rollout, from the progress then: the
    trainer's `learning_progress` must give every iteration's update those values, linear schedules on both sides."""
    import stable_baselines3 as sb3
    from stable_baselines3.common.env_util import make_vec_env

    n_steps, iterations = 16, 3
    model_class = {"ppo": sb3.PPO, "a2c": sb3.A2C}[algo_name]
    linear = {"learning_rate": lambda progress: 1e-3 * progress}
    linear |= {"clip_range": lambda progress: 0.2 * progress, "batch_size": 32} if algo_name == "ppo" else {}
    model = model_class("MlpPolicy", make_vec_env("CartPole-v1", n_envs=N_ENVS, seed=0), n_steps=n_steps, **linear)
    read: list[tuple[float, float]] = []  # (learning rate, clip range) as each SB3 update set them
    update_learning_rate = model._update_learning_rate
    model._update_learning_rate = lambda optimizer: (
        update_learning_rate(optimizer),
        read.append((optimizer.param_groups[0]["lr"], 0.2 * model._current_progress_remaining)),
    )
    timesteps = iterations * n_steps * N_ENVS
    model.learn(timesteps)

    config = {"n_steps": n_steps, "n_envs": N_ENVS, "learning_rate": 1e-3, "lr_schedule": "linear"}
    config |= {"clip_range": 0.2, "clip_schedule": "linear", "batch_size": 32} if algo_name == "ppo" else {}
    algo = build_algorithm(algo_name, "CartPole-v1", config, torch.device("cpu"), 0)
    for learning_rate, clip_range in read:
        algo.apply_schedules(learning_progress(algo, N_ENVS, timesteps))
        assert algo.learning_rate == pytest.approx(learning_rate, rel=1e-6)
        assert algo.optimizer.param_groups[0]["lr"] == pytest.approx(learning_rate, rel=1e-6)
        if algo_name == "ppo":
            assert algo.clip_range == pytest.approx(clip_range, rel=1e-6)
        algo.num_timesteps += algo.iteration_steps(N_ENVS)  # what the iteration counts
    assert len(read) == iterations and read[0][0] < 1e-3  # the first update already reads a smaller rate


@pytest.mark.parametrize("image", [True, False])
def test_the_initial_weights_are_drawn_as_sb3_draws_them(image):
    # SB3's ortho_init: every layer orthogonal with its gain (sqrt 2 for the encoder and towers, 0.01 for the action
    # head, 1 for the value head), so each weight's singular values all equal that gain, and zero biases
    from thrust_app.envs.gym_adapter import register_envs

    register_envs()
    env_id = "thrust/MinAtarBreakout-v0" if image else "CartPole-v1"
    sb3_net = {"features_extractor_class": thrust_cnn_extractor(), "net_arch": []} if image else {"net_arch": [64, 64]}
    model = sb3_rollout("ppo", env_id, {"n_steps": 8, "batch_size": 32, "policy_kwargs": sb3_net}, n_steps=8)
    algo = build_algorithm("ppo", env_id, {"n_envs": N_ENVS, "hidden": [64, 64]}, torch.device("cpu"), 0)
    sb3_weights = model.policy.state_dict()
    for name, weight in (shared_cnn_weights if image else actor_critic_weights)(algo.net):
        theirs = sb3_weights[name]
        if weight.dim() == 1:
            assert not weight.any() and not theirs.any(), name
            continue
        ours, gains = (torch.linalg.svdvals(w.reshape(w.shape[0], -1)) for w in (weight.detach(), theirs))
        torch.testing.assert_close(ours, gains, atol=1e-4, rtol=1e-4, msg=lambda m, n=name: f"{n}: {m}")
        assert not torch.equal(weight, theirs)  # drawn, not copied: the two libraries' own random streams
