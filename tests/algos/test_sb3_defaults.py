"""Every setting Thrust shares with Stable-Baselines3 defaults to SB3's value, except the choices named
here: a zoo preset lists only the values the zoo changes and relies on the rest being SB3's."""

from __future__ import annotations

import dataclasses
import inspect

import pytest
import sb3_contrib
import stable_baselines3 as sb3

from thrust_app.algos import ALGOS

#: Thrust's own defaults where SB3's constructor has the same setting, and why. Every zoo preset sets these.
THRUST_CHOICES = {
    ("ppo", "n_steps"): "8 envs x 128 steps: 1,024 steps per rollout across Thrust's batched envs (SB3: 1 x 2048)",
    ("ppo", "batch_size"): "256, a quarter of the 1,024-step rollout (SB3: 64 of 2,048)",
}
#: The peer class of each algorithm: SB3's, sb3-contrib's for recurrent PPO.
PEERS = {"recurrent_ppo": sb3_contrib.RecurrentPPO}
#: Off in Thrust is 0, in SB3 None; the same behaviour.
OFF_AS_ZERO = {
    ("ppo", "clip_range_vf"),
    ("ppo", "target_kl"),
    ("recurrent_ppo", "clip_range_vf"),
    ("recurrent_ppo", "target_kl"),
}


@pytest.mark.parametrize("algo", sorted(ALGOS))
def test_defaults_are_sb3s_but_for_the_named_choices(algo):
    sb3_defaults = inspect.signature(PEERS.get(algo) or getattr(sb3, algo.upper())).parameters
    config = ALGOS[algo].Config()
    differ = {}
    for field in dataclasses.fields(config):
        if field.name not in sb3_defaults or (algo, field.name) in THRUST_CHOICES:
            continue
        ours, theirs = getattr(config, field.name), sb3_defaults[field.name].default
        if (algo, field.name) in OFF_AS_ZERO:
            ours = ours or None
        if field.name == "target_entropy":  # 0 means SB3's "auto": -(action dimensions)
            ours = ours or "auto"
        if field.name == "replay_buffer_class":  # SB3's None is its ReplayBuffer (DictReplayBuffer for a Dict)
            ours = None if ours == "ReplayBuffer" else ours
        if ours != theirs:
            differ[field.name] = (ours, theirs)
    assert not differ, f"{algo}: Thrust's default differs from SB3's (Thrust, SB3): {differ}"


def test_dqn_has_no_double_q_target_by_default_like_sb3():
    """Double DQN is an option (double_dqn=True); on by default, the zoo's CartPole preset was not the zoo's
    and ended solved less often than SB3's (docs/CHANGELOG.md, the DQN parity A/B)."""
    assert ALGOS["dqn"].Config().double_dqn is False
