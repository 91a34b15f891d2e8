"""Action masks, the way sb3-contrib's MaskablePPO reads them (an `action_masks()` method, or
`info["action_mask"]`): PPO and A2C sample and learn among the allowed actions only, evaluation and the
exported bundle use the mask, and an algorithm that would ignore masks is refused in one line."""

from __future__ import annotations

import gymnasium as gym
import pytest
import torch

from thrust_app.config import ConfigError
from thrust_app.envs.core import Discrete
from thrust_app.nets.policies import ActorCritic
from thrust_app.training.evaluation import evaluate
from thrust_app.training.trainer import load_policy, train

#: The test env conftest.py registers (its class counts forbidden picks).
MaskedChoice = gym.spec("ThrustTest/MaskedChoice-v0").entry_point


@pytest.mark.parametrize("env_id", ["ThrustTest/MaskedChoice-v0", "ThrustTest/InfoMaskedChoice-v0"])
def test_ppo_learns_under_masks_and_never_picks_a_forbidden_action(env_id, tmp_path):
    MaskedChoice.picks["forbidden"] = 0
    summary = train("ppo", env_id, timesteps=12_288, run_dir=tmp_path / "run", eval_every=100_000, progress=False)
    assert MaskedChoice.picks["forbidden"] == 0  # every sampled and every evaluated action was allowed
    assert summary["eval_mean"] >= 15.0  # random play among the allowed actions: about 6.7
    _, policy = load_policy(tmp_path / "run")

    def act(obs, masks):
        return policy.act(torch.as_tensor(obs), torch.as_tensor(masks))[1].numpy()

    result = evaluate(act, env_id, episodes=5, seed=7)
    assert MaskedChoice.picks["forbidden"] == 0 and result.mean >= 15.0


def test_masked_logits_are_never_sampled_and_keep_a_finite_entropy():
    torch.manual_seed(0)
    net = ActorCritic((4,), Discrete(5))
    obs = torch.randn(4096, 4)
    mask = torch.rand(4096, 5) < 0.4
    mask[:, 2] = True  # at least one action allowed everywhere
    actions, log_probs, _ = net.sample(obs, mask)
    assert mask.gather(1, actions[:, None]).all()
    log_prob, entropy, _ = net.evaluate_actions(obs, actions, mask)
    assert torch.allclose(log_prob, log_probs, atol=1e-5) and torch.isfinite(entropy).all()
    only_one = torch.zeros(4096, 5, dtype=bool)
    only_one[:, 2] = True
    assert (net.act(obs, only_one)[1] == 2).all()
    assert torch.allclose(net.evaluate_actions(obs, actions.fill_(2), only_one)[1], torch.zeros(4096), atol=1e-6)


class MasksOnBoxActions(gym.Wrapper):
    """Pendulum claiming action masks, which mean nothing for continuous actions."""

    def action_masks(self):
        return [True]


gym.register("ThrustTest/MaskedPendulum-v0", entry_point=lambda: MasksOnBoxActions(gym.make("Pendulum-v1")))


def test_masks_on_continuous_actions_are_refused_in_one_line(tmp_path):
    with pytest.raises(ConfigError, match=r"offers action masks, which Thrust's ppo, a2c and dqn use with Discrete"):
        train("ppo", "ThrustTest/MaskedPendulum-v0", timesteps=2_048, run_dir=tmp_path / "run", progress=False)


def test_dqn_explores_and_learns_among_the_allowed_actions(tmp_path):
    MaskedChoice.picks["forbidden"] = 0
    settings = {"learning_starts": 500, "exploration_fraction": 0.3, "target_update_interval": 200, "buffer_size": 10_000}
    summary = train(
        "dqn", "ThrustTest/MaskedChoice-v0", timesteps=8_000, overrides=settings, run_dir=tmp_path / "run", progress=False
    )
    assert MaskedChoice.picks["forbidden"] == 0  # the warm-up, epsilon's random actions and the greedy ones
    assert summary["eval_mean"] >= 12.0  # random legal play: about 6.7


def test_uniform_allowed_draws_each_allowed_action_alike_and_no_other():
    from thrust_app.algos.off_policy import uniform_allowed

    mask = torch.tensor([[True, False, True, False, True, False]]).expand(60_000, 6)
    actions = uniform_allowed(torch.rand(60_000, generator=torch.Generator().manual_seed(0)), mask)
    counts = torch.bincount(actions, minlength=6)
    assert counts[[1, 3, 5]].sum() == 0 and (counts[[0, 2, 4]] - 20_000).abs().max() < 600


def test_dqn_targets_maximise_over_the_allowed_actions_only():
    from thrust_app.algos.dqn import dqn_loss
    from thrust_app.nets.policies import QNetwork

    torch.manual_seed(0)
    q_net, target = QNetwork((3,), 4, (8,)), QNetwork((3,), 4, (8,))
    obs, next_obs = torch.randn(5, 3), torch.randn(5, 3)
    actions, rewards, terminated = torch.tensor([0, 1, 2, 3, 0]), torch.ones(5), torch.zeros(5)
    next_mask = torch.tensor([[True, False, False, False]] * 5)
    loss = dqn_loss(q_net, target, (obs, actions, rewards, next_obs, terminated, next_mask), 0.9, double=False)
    with torch.no_grad():
        want = rewards + 0.9 * target(next_obs)[:, 0]  # only action 0 is allowed at s'
        expected = torch.nn.functional.smooth_l1_loss(q_net(obs).gather(1, actions[:, None]).squeeze(1), want)
    assert torch.allclose(loss, expected)


def test_a_masked_policy_exports_with_the_mask_as_an_input_and_evaluates_alike(tmp_path, capsys):
    import json

    from thrust_app.cli import main
    from thrust_app.interop.exporter import export_run

    train("ppo", "ThrustTest/MaskedChoice-v0", timesteps=4_096, run_dir=tmp_path / "run", eval_every=100_000, progress=False)
    bundle = export_run(tmp_path / "run", tmp_path / "bundle")
    manifest = json.loads((bundle.path / "manifest.json").read_text())
    assert [i["name"] for i in manifest["inputs"]] == ["obs", "action_mask"] and manifest["inputs"][1]["dtype"] == "bool"
    assert manifest["parity"]["action_agreement"] == 1.0
    MaskedChoice.picks["forbidden"] = 0
    outputs = []
    for target in (bundle.path, tmp_path / "run"):
        capsys.readouterr()
        assert main(["eval", str(target), "--episodes", "3"]) == 0
        outputs.append(capsys.readouterr().out.split("returns:")[1])
    assert outputs[0] == outputs[1] and MaskedChoice.picks["forbidden"] == 0
