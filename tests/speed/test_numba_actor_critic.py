"""The compiled A2C/PPO gradient (`update="numba"`) gives the reference's gradients: autograd through
`ActorCritic.evaluate_actions` on the algorithm files' own losses, and the same training step."""

from __future__ import annotations

import pytest
import torch

from thrust_app.algos import A2C, PPO
from thrust_app.envs.batched import make_batched
from thrust_app.envs.core import Box
from thrust_app.envs.tensors import EnvIO
from thrust_app.nets.policies import ActorCritic
from thrust_app.speed.numba_actor_critic import compiled_backward
from thrust_app.speed.switches import apply_speed

from .test_actor_critic_backward import LOSSES, assert_gradients_equal_autograds, example_batch, reference_gradients


@pytest.mark.parametrize("loss", LOSSES)
@pytest.mark.parametrize(
    "hidden, activation, space",
    [((64, 64), "tanh", "discrete"), ((32, 16), "relu", "discrete"), ((16, 24, 8), "tanh", "box"), ((64, 64), "relu", "box")],
)
def test_compiled_gradients_equal_autograds(loss, hidden, activation, space):
    """PPO's (with and without the value clip) and A2C's losses compiled; a loss of one's own ("new-term")
    takes the written-out torch path, and is held to the same gradients."""
    assert_gradients_equal_autograds(compiled_backward, loss, hidden, activation, space)


def test_the_clipped_ratio_gets_no_gradient_where_the_clip_bites():
    """Samples whose ratio left [1 - eps, 1 + eps] on the side the min picks carry no policy gradient; those
    exactly inside carry -r A / n. Both sides of that line must match autograd (a float64 clip bound in a
    float32 comparison flips samples whose ratio is inside)."""
    torch.manual_seed(1)
    net = ActorCritic((5,), Box((-2.0, -1.0), (2.0, 1.0), (2,)), (32, 32), "tanh")
    obs, actions, batch = example_batch("box")
    with torch.no_grad():
        log_prob, _, _ = net.evaluate_actions(obs, actions)
    spread = torch.linspace(-0.4, 0.4, len(log_prob))  # ratios from 0.67 to 1.49: inside and outside eps = 0.2
    batch = batch._replace(old_log_prob=log_prob - spread)
    loss_fn = LOSSES["ppo"](batch)
    _, want = reference_gradients(net, obs, actions, loss_fn)
    compiled_backward(net, obs, actions, loss_fn)
    for name, p in net.named_parameters():
        torch.testing.assert_close(p.grad, want[name], atol=2e-6, rtol=1e-4, msg=name)


@pytest.mark.parametrize("algo_cls, env_name", [(PPO, "cartpole"), (PPO, "pendulum"), (A2C, "cartpole")])
def test_the_compiled_update_trains_the_same_policy_as_the_reference(algo_cls, env_name):
    """One whole iteration (rollout, every minibatch, clip, optimizer steps) with update=numba and =reference."""
    nets = []
    for update in ("numba", "reference"):
        torch.manual_seed(0)
        env = make_batched(env_name, 4, seed=0)
        extra = {"batch_size": 64, "n_epochs": 2} if algo_cls is PPO else {}
        config = algo_cls.Config(n_envs=4, n_steps=32, update=update, **extra)
        algo = algo_cls(env.observation_space.shape, env.action_space, config, torch.device("cpu"), seed=0)
        algo.apply_schedules(1.0)
        assert apply_speed(algo, env).update == update, algo.notes
        env_io = EnvIO(torch.device("cpu"))
        before = algo.net.flat.detach().clone()
        algo.iteration(env, env_io, env_io.reset(env))
        assert (algo.net.flat - before).abs().max() > 1e-4  # the iteration trained: the comparison below means something
        nets.append(algo.net)
    torch.testing.assert_close(nets[0].flat, nets[1].flat, atol=1e-5, rtol=1e-4)


def test_one_hidden_layer_falls_back_to_the_written_out_update_with_a_note():
    env = make_batched("cartpole", 2, seed=0)
    config = PPO.Config(n_envs=2, hidden=(64,), update="numba")
    algo = PPO(env.observation_space.shape, env.action_space, config, torch.device("cpu"), seed=0)
    assert apply_speed(algo, env).update == "handwritten"
    assert any("update=numba falls back to handwritten" in note and "hidden=(64,)" in note for note in algo.notes)
