"""MultiDiscrete actions (one categorical per component) and MultiBinary ones (each bit a choice of two) for PPO
and A2C: they learn where a random policy fails, masks apply per component, and the bundle acts as torch."""

from __future__ import annotations

import pytest
import torch

from thrust_app.algos.base import ActionSpaceError
from thrust_app.envs.core import MultiDiscrete
from thrust_app.interop.exporter import export_run
from thrust_app.nets.policies import ActorCritic
from thrust_app.training.trainer import train


@pytest.mark.parametrize(("algo", "env_id"), [("ppo", "ThrustTest/Dials-v0"), ("a2c", "ThrustTest/BinaryDials-v0")])
def test_multi_component_actions_learn_where_random_play_fails(algo, env_id, tmp_path):
    summary = train(algo, env_id, timesteps=16_384, run_dir=tmp_path / "run", eval_every=100_000, progress=False)
    assert summary["eval_mean"] >= 9.0  # random settings: about 3.3 (Dials), 5 (BinaryDials)
    bundle = export_run(tmp_path / "run", tmp_path / "bundle")
    assert bundle.manifest["action_space"]["type"] == "multi_discrete"
    assert bundle.manifest["outputs"][1]["shape"] == ["batch", 3 if "Binary" not in env_id else 4]
    assert bundle.manifest["parity"]["action_agreement"] == 1.0


def test_each_component_samples_only_its_allowed_values_and_log_probs_add_up():
    torch.manual_seed(0)
    net = ActorCritic((5,), MultiDiscrete((3, 2)))
    obs = torch.randn(2048, 5)
    mask = torch.tensor([True, False, True, False, True]).expand(2048, 5)  # component 0: 0 or 2; component 1: 1
    actions, log_probs, _ = net.sample(obs, mask)
    assert set(actions[:, 0].tolist()) == {0, 2} and (actions[:, 1] == 1).all()
    log_prob, entropy, _ = net.evaluate_actions(obs, actions, mask)
    assert torch.allclose(log_prob, log_probs, atol=1e-5) and torch.isfinite(entropy).all()
    logits = net.pi_head(net.towers.tower(obs, 0))
    by_hand = logits[:, :3].log_softmax(-1).gather(1, actions[:, :1]) + logits[:, 3:].log_softmax(-1).gather(1, actions[:, 1:])
    unmasked, _, _ = net.evaluate_actions(obs, actions)
    assert torch.allclose(unmasked, by_hand.squeeze(1), atol=1e-5)


def test_algorithms_without_multi_component_actions_name_those_with():
    with pytest.raises(
        ActionSpaceError, match=r"dqn needs a Discrete action space, but .* has a MultiDiscrete one.*ppo, recurrent_ppo or a2c"
    ):
        train("dqn", "ThrustTest/Dials-v0", timesteps=1_000, progress=False)
