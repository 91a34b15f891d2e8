"""PPO's loss against a hand-computed example, and value-function clipping with SB3's semantics."""

from __future__ import annotations

import math

import torch

from thrust_app.algos.ppo import Minibatch, PPOConfig, ppo_loss

# Two samples: ratios r = pi / pi_old = 0.5 / 0.4 = 1.25 and 0.14 / 0.2 = 0.7; advantages 1 and -2.
LOG_PROB = torch.tensor([math.log(0.5), math.log(0.14)])
BATCH = Minibatch(
    old_log_prob=torch.tensor([math.log(0.4), math.log(0.2)]),
    old_value=torch.tensor([0.8, 1.0]),
    advantages=torch.tensor([1.0, -2.0]),
    returns=torch.tensor([0.0, 4.0]),
)
VALUE, ENTROPY = torch.tensor([1.0, 2.0]), torch.tensor([0.5, 0.7])


def test_ppo_loss_matches_a_hand_computation():
    config = PPOConfig(normalize_advantage=False, ent_coef=0.01, vf_coef=0.5)
    loss, logs = ppo_loss(LOG_PROB, ENTROPY, VALUE, BATCH, clip_range=0.2, config=config)
    # L^CLIP = mean(min(1 * 1.25, 1 * 1.2), min(-2 * 0.7, -2 * 0.8)) = mean(1.2, -1.6) = -0.2
    # L^VF = mean((1 - 0)^2, (2 - 4)^2) = 2.5;  H = mean(0.5, 0.7) = 0.6
    torch.testing.assert_close(loss, torch.tensor(0.2 + 0.5 * 2.5 - 0.01 * 0.6))
    approx_kl = ((0.25 - math.log(1.25)) + (-0.3 - math.log(0.7))) / 2
    torch.testing.assert_close(logs, torch.tensor([0.2, 2.5, 0.6, approx_kl, 1.0]))


def test_value_clipping_keeps_the_prediction_near_the_old_value():
    config = PPOConfig(normalize_advantage=False, vf_coef=1.0, clip_range_vf=0.5)
    _, logs = ppo_loss(LOG_PROB, ENTROPY, VALUE, BATCH, clip_range=0.2, config=config)
    # V_clipped = V_old + clip(V - V_old, -0.5, 0.5) = (0.8 + 0.2, 1.0 + 0.5) = (1.0, 1.5)
    torch.testing.assert_close(logs[1], torch.tensor(((1.0 - 0.0) ** 2 + (1.5 - 4.0) ** 2) / 2))


def test_a_one_sample_minibatch_is_not_normalised_to_nan():
    loss, _ = ppo_loss(
        LOG_PROB[:1], ENTROPY[:1], VALUE[:1], Minibatch(*(t[:1] for t in BATCH)), clip_range=0.2, config=PPOConfig()
    )
    assert torch.isfinite(loss)
