"""Batched envs step N copies exactly as N cores would, on numpy and on torch, with auto-reset."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from thrust_app.envs.batched import make_batched, step_together
from thrust_app.envs.core import Discrete, InvalidActionError, make_core

N = 16


def to_numpy(x):
    return x.cpu().numpy() if isinstance(x, torch.Tensor) else np.asarray(x)


def load_state(core, row):
    """Put a batched copy's state into a core (the two draw start states from different generators)."""
    if core.id == "thrust/Bandit-v0":
        core.context = int(row[0])
    else:
        core.state = [float(v) for v in row]


def random_actions(space, rng, n, backend):
    if isinstance(space, Discrete):
        a = rng.integers(space.n, size=n)
    else:
        a = rng.uniform(space.low, space.high, size=(n, *space.shape)).astype(np.float32)
    return torch.as_tensor(a) if backend == "torch" else a


@pytest.mark.parametrize(("backend", "n"), [("numpy", N), ("torch", N), ("numpy", 1)])  # one numpy copy: the scalar path
@pytest.mark.parametrize("env_id", ["bandit", "cartpole", "pendulum"])
def test_array_batched_env_matches_the_core_step_for_step(env_id, backend, n):
    vec = make_batched(env_id, n, seed=1, backend=backend)
    assert (vec.scalar_core is not None) == (n == 1)
    cores = [make_core(env_id) for _ in range(n)]
    vec.reset()
    for core, row in zip(cores, to_numpy(vec.state), strict=True):
        core.reset(seed=0)
        load_state(core, row)
    rng = np.random.default_rng(0)
    episodes_done = 0
    for t in range(450):
        actions = random_actions(vec.action_space, rng, n, backend)
        out = vec.step(actions)
        state = to_numpy(vec.state)
        for i, core in enumerate(cores):
            r = core.step(to_numpy(actions)[i])
            np.testing.assert_allclose(to_numpy(out.final_obs)[i], np.float32(r.obs), atol=1e-6, err_msg=f"t={t} env={i}")
            assert abs(float(to_numpy(out.reward)[i]) - r.reward) <= 1e-5
            assert (bool(to_numpy(out.terminated)[i]), bool(to_numpy(out.truncated)[i])) == (r.terminated, r.truncated)
            if r.terminated or r.truncated:
                episodes_done += 1
                assert int(to_numpy(out.episode_length)[i]) == core.steps
                assert abs(float(to_numpy(out.episode_return)[i]) - core.episode_return) < 1e-6
                core.reset()
                load_state(core, state[i])
            np.testing.assert_allclose(to_numpy(out.obs)[i], np.float32(vec_obs_of(core)), atol=1e-6)
    assert episodes_done > n  # auto-reset was exercised


@pytest.mark.parametrize("backend", ["numpy", "torch"])
@pytest.mark.parametrize("env_id", ["bandit", "cartpole", "pendulum"])
def test_envs_stepped_together_end_where_their_own_steps_leave_them(env_id, backend):
    together = [make_batched(env_id, 3, seed=seed, backend=backend) for seed in (0, 1, 2)]
    alone = [make_batched(env_id, 3, seed=seed, backend=backend) for seed in (0, 1, 2)]
    for env in together + alone:
        env.reset()
    rng = np.random.default_rng(0)
    for t in range(250):
        actions = random_actions(together[0].action_space, rng, 9, backend)
        out = step_together(together, actions)
        own = [env.step(actions[3 * k : 3 * k + 3]) for k, env in enumerate(alone)]
        for name, field in out._asdict().items():
            if field is not None:
                expected = np.concatenate([to_numpy(getattr(step, name)) for step in own])
                np.testing.assert_array_equal(to_numpy(field), expected, err_msg=f"t={t} {name}")
    for mine, theirs in zip(together, alone, strict=True):  # each env's state, counters and generator: its own
        for name in ("state", "steps", "returns"):
            np.testing.assert_array_equal(to_numpy(getattr(mine, name)), to_numpy(getattr(theirs, name)))
        assert to_numpy(mine.step(actions[:3]).obs).tolist() == to_numpy(theirs.step(actions[:3]).obs).tolist()


def test_only_array_batched_envs_of_one_kind_step_together():
    cartpoles = [make_batched("cartpole", 2), make_batched("cartpole", 1)]  # one copy steps through the core
    with pytest.raises(ValueError, match="of one kind, more than one copy each"):
        step_together(cartpoles, np.zeros(3, np.int64))
    mixed = [make_batched("cartpole", 2), make_batched("cartpole-novel", 2)]
    with pytest.raises(ValueError, match="of one kind"):
        step_together(mixed, np.zeros(4, np.int64))


def vec_obs_of(core):
    if core.id == "thrust/Bandit-v0":
        return [float(core.context)]
    if core.id == "thrust/Pendulum-v0":
        return core._obs()
    return core.state


def test_pendulum_runs_into_its_time_limit_in_every_copy():
    vec = make_batched("pendulum", 4, seed=0)
    vec.reset()
    for _ in range(199):
        out = vec.step(np.zeros((4, 1), np.float32))
        assert not out.truncated.any()
    out = vec.step(np.zeros((4, 1), np.float32))
    assert out.truncated.all() and (out.episode_length == 200).all()


def test_loop_batched_snake_replays_cores_seeded_seed_plus_i():
    vec = make_batched("snake", 4, seed=10)
    cores = [make_core("snake") for _ in range(4)]
    obs = vec.reset()
    for i, core in enumerate(cores):
        assert obs[i].ravel().tolist() == core.reset(seed=10 + i)
    rng = np.random.default_rng(0)
    for _ in range(300):
        actions = rng.integers(3, size=4)
        out = vec.step(actions)
        for i, core in enumerate(cores):
            r = core.step(int(actions[i]))
            assert out.final_obs[i].ravel().tolist() == r.obs
            assert out.reward[i] == r.reward and out.terminated[i] == r.terminated
            next_obs = core.reset() if r.terminated or r.truncated else r.obs
            assert out.obs[i].ravel().tolist() == next_obs


@pytest.mark.parametrize("backend", ["numpy", "torch"])
def test_batched_envs_refuse_bad_actions(backend):
    asarray = torch.as_tensor if backend == "torch" else np.asarray
    cart = make_batched("cartpole", 4, seed=0, backend=backend)
    cart.reset()
    with pytest.raises(InvalidActionError, match=r"env 2 is 2, outside \[0, 1\]"):
        cart.step(asarray([0, 1, 2, 0]))
    with pytest.raises(InvalidActionError, match=r"shape \(3,\); expected \(4,\)"):
        cart.step(asarray([0, 1, 1]))
    with pytest.raises(InvalidActionError, match="dtype"):
        cart.step(asarray([0.0, 1.0, 1.0, 0.0]))
    pend = make_batched("pendulum", 2, seed=0, backend=backend)
    pend.reset()
    with pytest.raises(InvalidActionError, match="env 1"):
        pend.step(asarray([[0.0], [3.0]], dtype=np.float32 if backend == "numpy" else torch.float32))
    with pytest.raises(InvalidActionError, match=r"expected \(2, 1\)"):
        pend.step(asarray([0.0, 1.0]))


def test_unknown_backend_is_explained():
    with pytest.raises(ValueError, match="choose 'numpy' or 'torch'"):
        make_batched("cartpole", 2, backend="jax")
    with pytest.raises(ValueError, match="CPU only"):
        make_batched("cartpole", 2, backend="numpy", device="cuda")


@pytest.mark.skipif(
    not torch.cuda.is_available(),
    reason="no CUDA device on this machine: the cuda path of the batched envs is exercised by benches/gpu_check.sh",
)
def test_batched_cartpole_runs_on_cuda():
    vec = make_batched("cartpole", 64, seed=0, backend="torch", device="cuda")
    obs = vec.reset()
    out = vec.step(torch.ones(64, dtype=torch.int64, device="cuda"))
    assert obs.device.type == out.obs.device.type == "cuda"
