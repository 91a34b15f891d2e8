"""The written-out SAC updates, in torch (`update="handwritten"`, speed/sac_backward.py) and compiled by numba
(`update="numba"`, speed/numba_sac.py), give the reference's gradients, losses and steps:
`SAC.optimize`'s autograd on the same nets, batch and random draws."""

from __future__ import annotations

import pytest
import torch

from thrust_app.algos import SAC, SACConfig
from thrust_app.envs.core import Box
from thrust_app.speed.switches import choose_update

SPACE = Box((-2.0, -0.5), (1.0, 3.0), (2,))  # uneven bounds: the rescaling's factor is not 1


def make_sac(update: str, hidden: tuple[int, ...], auto_alpha: bool = True) -> SAC:
    torch.manual_seed(0)
    config = SACConfig(hidden=hidden, auto_alpha=auto_alpha, init_alpha=0.3, batch_size=40, update=update)
    sac = SAC((5,), SPACE, config, torch.device("cpu"), seed=0)
    assert choose_update(sac) == update
    generator = torch.Generator().manual_seed(1)
    n = 100
    sac.buffer.add(
        torch.randn(n, 5, generator=generator) * 2,
        torch.tensor(SPACE.low) + torch.rand(n, 2, generator=generator) * (torch.tensor(SPACE.high) - torch.tensor(SPACE.low)),
        torch.randn(n, generator=generator) * 3,
        torch.randn(n, 5, generator=generator) * 2,
        (torch.rand(n, generator=generator) < 0.3).float(),
    )
    return sac


def after_steps(sac: SAC, steps: int) -> dict[str, torch.Tensor]:
    torch.manual_seed(7)  # the actor's sampling noise comes from torch's global stream, as in `actor.sample`
    for _ in range(steps):
        logs = sac.train_step()
    return {
        **{f"log {key}": value for key, value in logs.items()},
        "actor grad": sac.actor.flat.grad,
        "critic grad": sac.critic.flat.grad,
        "log_alpha grad": sac.log_alpha.grad,
        "actor": sac.actor.flat,
        "critic": sac.critic.flat,
        "critic_target": sac.critic_target.flat,
        "log_alpha": sac.log_alpha,
    }


WAYS = ["handwritten", "numba"]


@pytest.mark.parametrize("way", WAYS)
@pytest.mark.parametrize("hidden", [(32, 32), (16, 24, 8)])
@pytest.mark.parametrize("auto_alpha", [True, False])
def test_one_written_out_update_equals_the_reference(way, hidden, auto_alpha):
    want = after_steps(make_sac("reference", hidden, auto_alpha), 1)
    sac = make_sac(way, hidden, auto_alpha)
    got = after_steps(sac, 1)
    for key, value in want.items():
        if value is None:  # log_alpha's gradient without auto_alpha
            assert got[key] is None, key
            continue
        if key.endswith("grad"):
            assert value.abs().sum() > 0, key
        torch.testing.assert_close(got[key], value.detach(), atol=2e-6, rtol=1e-4, msg=key)


@pytest.mark.parametrize("way", WAYS)
def test_one_written_out_update_equals_the_reference_where_actions_saturate(way):
    """Where tanh saturates (|u| of 6 to 8 here), SB3's correction log(1 - tanh(u)^2 + 1e-6) bends its gradient
    away from the exact form's: the written-out updates follow the reference there too."""

    def saturating(update: str) -> SAC:
        sac = make_sac(update, (32, 32))
        with torch.no_grad():
            sac.actor.mu.bias.copy_(torch.tensor([6.0, -8.0]))
        return sac

    want, got = after_steps(saturating("reference"), 1), after_steps(saturating(way), 1)
    for key, value in want.items():
        torch.testing.assert_close(got[key], value.detach(), atol=2e-6, rtol=1e-4, msg=key)


@pytest.mark.parametrize("way", WAYS)
def test_twenty_written_out_updates_stay_with_the_reference(way):
    want = after_steps(make_sac("reference", (32, 32)), 20)
    got = after_steps(make_sac(way, (32, 32)), 20)
    for key in ("actor", "critic", "log_alpha"):
        torch.testing.assert_close(got[key], want[key].detach(), atol=1e-4, rtol=1e-3, msg=key)


@pytest.mark.parametrize("way", WAYS)
def test_the_switch_trains_the_same_policy_on_pendulum(way, run_iterations):
    settings = {"hidden": (32, 32), "learning_starts": 50, "batch_size": 32}
    (written_out, _), (reference, _) = (
        run_iterations(SAC, "pendulum", 150, update=update, **settings) for update in (way, "reference")
    )
    torch.testing.assert_close(written_out.actor.flat, reference.actor.flat, atol=1e-4, rtol=1e-3)


@pytest.mark.parametrize("way", WAYS)
def test_image_observations_fall_back_to_the_reference_with_a_note(way):
    sac = SAC((3, 5, 5), SPACE, SACConfig(buffer_size=16, update=way), torch.device("cpu"), seed=0)
    assert choose_update(sac) == "reference"
    assert any(f"update={way} falls back to reference" in note for note in sac.notes)


@pytest.mark.parametrize("way", WAYS)
def test_critics_other_than_two_fall_back_to_the_reference_with_a_note(way):
    sac = SAC((5,), SPACE, SACConfig(buffer_size=16, n_critics=1, update=way), torch.device("cpu"), seed=0)
    assert choose_update(sac) == "reference"
    assert any(f"update={way} falls back to reference" in note and "n_critics=1" in note for note in sac.notes)


def test_an_actor_without_hidden_layers_runs_the_torch_update_with_a_note():
    sac = SAC((5,), SPACE, SACConfig(buffer_size=16, hidden=(), update="numba"), torch.device("cpu"), seed=0)
    assert choose_update(sac) == "handwritten"
    assert any("update=numba falls back to handwritten" in note and "hidden" in note for note in sac.notes)
