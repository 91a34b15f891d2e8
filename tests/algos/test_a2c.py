"""A2C's loss against a hand-computed example."""

from __future__ import annotations

import math

import torch

from thrust_app.algos.a2c import A2CConfig, a2c_loss


def test_a2c_loss_matches_a_hand_computation():
    log_prob = torch.tensor([math.log(0.5), math.log(0.2)])
    advantages, returns = torch.tensor([1.0, -2.0]), torch.tensor([0.0, 4.0])
    config = A2CConfig(ent_coef=0.01, vf_coef=0.5)
    loss, logs = a2c_loss(log_prob, torch.tensor([0.5, 0.7]), torch.tensor([1.0, 2.0]), advantages, returns, config)
    policy_loss = -(1.0 * math.log(0.5) - 2.0 * math.log(0.2)) / 2  # -mean(A log pi)
    torch.testing.assert_close(logs, torch.tensor([policy_loss, 2.5, 0.6]))
    torch.testing.assert_close(loss, torch.tensor(policy_loss + 0.5 * 2.5 - 0.01 * 0.6))
