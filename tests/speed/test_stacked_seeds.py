"""Seeds as a batch (speed/stacked_seeds.py): the stacked forwards equal each seed's own ActorCritic, and a seed
of a batch follows a lone run of that seed, iteration by iteration, up to float reassociation."""

from __future__ import annotations

import pytest
import torch

from thrust_app.envs.core import Box, Discrete
from thrust_app.nets.policies import ActorCritic
from thrust_app.speed.stacked_seeds import StackedOnPolicy, StackedTowers
from thrust_app.training.run_spec import make_spec
from thrust_app.training.seed_batch import global_stream
from thrust_app.training.trainer import Trainer, learning_progress


def stacked_rows(nets: list[ActorCritic]) -> dict[str, torch.Tensor]:
    flat = torch.stack([net.flat.detach() for net in nets])
    flat.grad = torch.zeros_like(flat)
    return StackedTowers(nets[0]).leaves(flat)


@pytest.mark.parametrize("space", [Discrete(3), Box((-2.0, -2.0), (2.0, 2.0), (2,))], ids=["discrete", "box"])
def test_stacked_forwards_equal_each_seeds_own_net(space):
    nets = []
    for seed in range(3):
        torch.manual_seed(seed)
        nets.append(ActorCritic((5,), space, (16, 16), "tanh", log_std_init=-0.3 * seed))
    towers, params = StackedTowers(nets[0]), stacked_rows(nets)
    obs = torch.randn(3, 7, 5)
    actions = torch.randint(0, 3, (3, 7)) if isinstance(space, Discrete) else torch.randn(3, 7, 2)
    head_out, values = towers.heads(params, obs)
    log_prob, entropy, value = towers.evaluate_actions(params, obs, actions)
    for k, net in enumerate(nets):
        with torch.no_grad():
            assert torch.allclose(head_out[k], net.pi_head(net.features(obs[k])[0]), atol=1e-6)
            assert torch.allclose(values[k], net.value(obs[k]), atol=1e-6)
            expected = net.evaluate_actions(obs[k], actions[k])
        for got, want in zip((log_prob[k], entropy[k], value[k]), expected, strict=True):
            assert torch.allclose(got, want, atol=1e-5)


def trainers(algo: str, env: str, seeds, tmp_path, preset: str = "default") -> tuple[list[Trainer], list[torch.Generator]]:
    built, streams = [], []
    for seed in seeds:
        spec = make_spec(algo, env, None, seed, "cpu", None, 10, None, None, None, 1, None, False, preset)
        built.append(Trainer(spec, tmp_path / f"{algo}-{seed}-{len(seeds)}", torch.device("cpu"), progress=False))
        streams.append(global_stream())
    return built, streams


def lone_run(algo: str, env: str, seed: int, tmp_path, preset: str, n: int):
    """A lone run of `seed` after n iterations (its default speed switches: numpy acting, written-out update),
    built and run before anything else draws from torch's global generator; its trainer and last iteration."""
    (trainer,), _ = trainers(algo, env, (seed,), tmp_path, preset)
    for _ in range(n):
        iteration = trainer.run_iteration()
        trainer.obs = iteration.obs
    return trainer, iteration


@pytest.mark.parametrize(
    "algo, env, preset, iterations",
    [
        ("ppo", "CartPole-v1", "default", 3),
        ("a2c", "CartPole-v1", "default", 12),
        ("ppo", "Pendulum-v1", "no-sde", 1),
        ("ppo", "cartpole", "default", 3),  # Thrust's array-batched env: every seed's envs in one array step
        ("ppo", "pendulum", "no-sde", 1),  # ... through the time limit's cut episodes (200 steps)
    ],
    ids=["ppo-discrete", "a2c-rmsprop", "ppo-box", "ppo-arrays", "ppo-box-arrays"],
    # Box: PPO one iteration, as far as two forms of the lone run itself
    # agree (its written-out and autograd updates part by ~5e-3 in the second: PPO's 320 Adam steps on Pendulum grow
    # float rounding)
)
def test_a_seed_of_a_batch_follows_the_lone_run_of_that_seed(algo, env, preset, iterations, tmp_path):
    lone = [lone_run(algo, env, seed, tmp_path / "lone", preset, iterations) for seed in (0, 1)]
    batched, streams = trainers(algo, env, (0, 1, 2), tmp_path / "batch", preset)
    assert not torch.equal(batched[0].algo.net.flat, batched[1].algo.net.flat)  # seeds start apart
    batch = StackedOnPolicy([t.algo for t in batched], streams)
    for _ in range(iterations):
        for trainer in batched:
            trainer.algo.apply_schedules(learning_progress(trainer.algo, trainer.env.num_envs, trainer.spec.timesteps))
        results = batch.iteration([t.env for t in batched], [t.obs for t in batched])
        for trainer, result in zip(batched, results, strict=True):
            trainer.obs = result.obs
    algo_box = env in ("Pendulum-v1", "pendulum")
    for k, (trainer, iteration) in enumerate(lone):
        # discrete: the same actions, the same episodes; Box: actions equal to float rounding, which 200 steps of a
        # pendulum's dynamics grow to ~1e-4 of a return
        assert results[k].episode_returns == pytest.approx(iteration.episode_returns, rel=1e-3 if algo_box else 0)
        assert results[k].episode_lengths == iteration.episode_lengths
        assert torch.allclose(results[k].obs, iteration.obs, atol=1e-5)
        for name, value in iteration.stats.items():
            assert results[k].stats[name] == pytest.approx(value, rel=1e-4, abs=1e-6), name
        assert torch.allclose(batched[k].algo.net.flat, trainer.algo.net.flat, atol=1e-5)
        assert batched[k].algo.num_timesteps == trainer.algo.num_timesteps
        lone_state = trainer.algo.optimizer.state_dict()["state"][0]
        batch_state = batched[k].algo.optimizer.state_dict()["state"][0]
        for key, value in lone_state.items():
            assert torch.allclose(batch_state[key].float(), value.float(), rtol=1e-4, atol=1e-7), key
