"""The speed switches as a run resolves them (speed/switches.py): each setting puts its form of a step in
place on the one instance, `autograd`/`torch` leave the algorithm's own reference methods, a setting
that cannot serve falls back one step with exactly one line, and a captured graph is dropped when a
checkpoint is loaded."""

from __future__ import annotations

import pytest
import torch

from thrust_app.algos import A2C, DQN, PPO, SAC
from thrust_app.envs.batched import make_batched
from thrust_app.speed.cuda_graphs import GraphedStep
from thrust_app.speed.numpy_exploration import NumpyExploration
from thrust_app.speed.switches import apply_speed, choose_graphs

CASES = {"a2c": (A2C, "cartpole"), "ppo": (PPO, "cartpole"), "dqn": (DQN, "cartpole"), "sac": (SAC, "pendulum")}
#: The step each algorithm's `update` setting replaces.
UPDATE_STEP = {"a2c": "backward", "ppo": "backward", "dqn": "update", "sac": "optimize"}


def build(algo: str, env_backend: str = "numpy", **settings):
    algo_cls, env_id = CASES[algo]
    env = make_batched(env_id, 2, seed=0, backend=env_backend)
    agent = algo_cls(
        env.observation_space.shape, env.action_space, algo_cls.Config(n_envs=2, **settings), torch.device("cpu"), 0
    )
    return agent, env


def is_reference(agent, step: str) -> bool:
    """Whether `agent.step` is still the class's own method (nothing was put in its place)."""
    return step not in vars(agent) and getattr(type(agent), step) is getattr(agent, step).__func__


@pytest.mark.parametrize("algo", sorted(CASES))
def test_the_reference_settings_leave_every_step_the_algorithms_own(algo):
    agent, env = build(algo, update="reference", acting="torch")
    choice = apply_speed(agent, env)
    assert (choice.acting, choice.update, choice.graphed) == ("torch", "reference", {})
    steps = [UPDATE_STEP[algo], "collect" if algo in ("a2c", "ppo") else "act"]
    assert all(is_reference(agent, step) for step in steps) and agent.notes == []


@pytest.mark.parametrize("algo", sorted(CASES))
def test_the_default_settings_put_the_fast_forms_in_place(algo):
    agent, env = build(algo)
    choice = apply_speed(agent, env)
    assert (choice.acting, choice.update) == ("numpy", "handwritten") and agent.speed is choice
    assert not is_reference(agent, UPDATE_STEP[algo])
    if algo in ("dqn", "sac"):
        assert isinstance(agent.act, NumpyExploration)
    else:
        assert not is_reference(agent, "collect") and not is_reference(agent, "optimizer_step")


@pytest.mark.parametrize("algo", sorted(CASES))
def test_a_setting_that_cannot_serve_falls_back_with_one_line(algo):
    agent, env = build(algo, env_backend="torch")  # numpy acting needs a numpy env
    choice = apply_speed(agent, env)
    assert choice.acting == "torch" and is_reference(agent, "collect" if algo in ("a2c", "ppo") else "act")
    (note,) = agent.notes
    assert note.startswith("acting=numpy falls back to torch: ") and "\n" not in note


def test_a_captured_step_is_forgotten_when_a_checkpoint_is_loaded():
    """On the CPU nothing is captured (choose_graphs refuses); the wrapping and its after-load hook are
    checked by asking for a wrap on a stand-in CUDA device."""
    agent, env = build("dqn", cuda_graphs=True)
    apply_speed(agent, env)
    assert agent.speed.graphed == {} and any(note.startswith("cuda_graphs=True falls back") for note in agent.notes)
    agent.device = torch.device("cuda")  # choose_graphs only reads the device to decide
    graphed = choose_graphs(agent, env, written_out=True)
    agent.device = torch.device("cpu")
    assert set(graphed) == {"update"} and agent.update is graphed["update"] and isinstance(agent.update, GraphedStep)
    agent.update.captured = object()  # as after a capture
    agent.load_state_dict(agent.state_dict())
    assert agent.update.captured is None
