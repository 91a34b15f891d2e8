"""Observation and reward normalisation while training: SB3's VecNormalize step for step, frozen and
folded into the exported policy, kept across a resume; off-policy replay keeping the env's own values."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from stable_baselines3.common.vec_env import DummyVecEnv, VecNormalize

from thrust_app.algos import SAC
from thrust_app.envs import make_env
from thrust_app.envs.batched import make_batched
from thrust_app.envs.tensors import EnvIO
from thrust_app.interop.bundle import OnnxPolicy
from thrust_app.interop.exporter import export_run
from thrust_app.nets.obs_normalizer import NormalizedPolicy, ObsNormalizer
from thrust_app.speed.switches import apply_speed
from thrust_app.training.normalization import NormalizedVecEnv, RunningMeanStd, normalized
from thrust_app.training.trainer import load_policy, train

QUIET = {"progress": False, "log": lambda _: None}


def test_running_statistics_equal_numpys_over_all_batches():
    rng = np.random.default_rng(0)
    batches = [rng.normal(3.0, 2.0, size=(n, 4)) for n in (1, 7, 32, 5)]
    rms = RunningMeanStd((4,), epsilon=0.0 + 1e-12)
    for batch in batches:
        rms.update(batch)
    everything = np.concatenate(batches)
    np.testing.assert_allclose(rms.mean, everything.mean(0), rtol=1e-9)
    np.testing.assert_allclose(rms.var, everything.var(0), rtol=1e-9)


@pytest.mark.parametrize("rows", [1, 3])
def test_running_statistics_equal_sb3s_bit_for_bit(rows):
    """One env's steps (batches of one row, which skip numpy's mean and variance) and several envs' steps:
    SB3's RunningMeanStd on the same float32 stream ends with the very same numbers."""
    from stable_baselines3.common.running_mean_std import RunningMeanStd as SB3RunningMeanStd

    rng = np.random.default_rng(0)
    ours, theirs = RunningMeanStd((5,)), SB3RunningMeanStd(shape=(5,))
    for _ in range(200):
        batch = rng.normal(3.0, 2.0, size=(rows, 5)).astype(np.float32)
        ours.update(batch)
        theirs.update(batch)
    np.testing.assert_array_equal(ours.mean, theirs.mean)
    np.testing.assert_array_equal(ours.var, theirs.var)
    assert ours.count == theirs.count


@pytest.mark.parametrize("env_id", ["CartPole-v1", "Pendulum-v1"])
def test_normalized_steps_equal_sb3s_vec_normalize(env_id):
    """The same envs, seeds and actions through SB3's VecNormalize and Thrust's wrapper: the same
    observations (terminal ones too; final_obs is obs where no episode ended) and rewards, 300 steps with episode
    ends."""
    settings = {"norm_obs": True, "norm_reward": True, "clip_obs": 5.0, "clip_reward": 3.0, "gamma": 0.95}
    theirs = DummyVecEnv([lambda: make_env(env_id) for _ in range(2)])
    theirs.seed(7)
    theirs = VecNormalize(theirs, epsilon=1e-8, **settings)
    ours = NormalizedVecEnv(make_batched(env_id, 2, seed=7), epsilon=1e-8, **settings)
    np.testing.assert_allclose(ours.reset(), theirs.reset(), rtol=1e-5, atol=1e-5)
    rng, ends = np.random.default_rng(1), 0
    for _ in range(300):
        actions = rng.integers(0, 2, 2) if env_id == "CartPole-v1" else rng.uniform(-2, 2, (2, 1)).astype(np.float32)
        obs, reward, done, infos = theirs.step(actions)
        step = ours.step(actions)
        np.testing.assert_allclose(step.obs, obs, rtol=1e-5, atol=1e-5)
        np.testing.assert_allclose(step.reward, reward, rtol=1e-5, atol=1e-5)
        for index in np.flatnonzero(done):
            ends += 1
            np.testing.assert_allclose(step.final_obs[index], infos[index]["terminal_observation"], rtol=1e-5, atol=1e-5)
        np.testing.assert_array_equal(step.final_obs[~done], step.obs[~done])  # where no episode ended: the obs
    assert ends > 0


@pytest.fixture(scope="module")
def normalized_run(tmp_path_factory):
    run_dir = tmp_path_factory.mktemp("runs") / "ppo-pendulum"
    overrides = {"normalize": True, "n_envs": 4, "n_steps": 64, "batch_size": 64}
    train("ppo", "pendulum", timesteps=2048, seed=0, device="cpu", run_dir=run_dir, overrides=overrides, **QUIET)
    return run_dir


def test_the_policy_of_a_normalized_run_acts_on_raw_observations(normalized_run, tmp_path):
    _, policy = load_policy(normalized_run)
    assert isinstance(policy, NormalizedPolicy) and not torch.equal(policy.normalizer.mean, torch.zeros(3))
    raw = np.array([[1.0, 0.0, 6.0], [-0.5, 0.8, -7.0]], dtype=np.float32)
    with torch.no_grad():
        want = policy.act(torch.as_tensor(raw)).numpy()
        unnormalized = policy.policy.act(torch.as_tensor(raw)).numpy()
    assert not np.allclose(want, unnormalized)  # the statistics matter for these observations
    bundle = export_run(normalized_run, tmp_path / "bundle")  # the export checks its own parity too
    np.testing.assert_allclose(OnnxPolicy(bundle).act(raw), want, atol=1e-5)


def off_policy_steps(acting: str, normalize: bool) -> tuple[SAC, NormalizedVecEnv | None]:
    """SAC after 250 steps of 2 Pendulum envs (one time limit each), acting at random (learning_starts not reached,
    so both forms take the same actions whatever they observe), through `acting`'s form of collecting."""
    config = SAC.Config(n_envs=2, learning_starts=10_000, acting=acting, normalize=normalize, hidden=(32, 32))
    env = make_batched("pendulum", 2, seed=3)
    algo = SAC((3,), env.action_space, config, torch.device("cpu"), seed=0)
    if normalize:
        env = normalized(env, config)
        algo.use_normalizer(env)
    assert apply_speed(algo, env).acting == acting
    env_io = EnvIO(torch.device("cpu"))
    obs = env_io.reset(env)
    for _ in range(250):
        obs = algo.iteration(env, env_io, obs).obs
    return algo, env if normalize else None


@pytest.mark.parametrize("acting", ["torch", "numpy"])
def test_an_off_policy_buffer_keeps_the_envs_own_values_and_samples_them_normalised(acting):
    """SB3 with VecNormalize: the replay buffer holds the original observations and rewards (terminal observations
    too), and a minibatch is normalised when sampled, with the statistics of that moment."""
    plain, _ = off_policy_steps(acting, normalize=False)
    algo, env = off_policy_steps(acting, normalize=True)
    assert algo.buffer.size == plain.buffer.size == 500
    for name in ("obs", "next_obs", "rewards", "terminated"):
        assert torch.equal(getattr(algo.buffer, name), getattr(plain.buffer, name)), name
    assert not np.allclose(env.obs_rms.mean, 0.0) and env.ret_rms.var != 1.0  # the statistics moved
    seen = []
    algo.update = lambda batch: seen.append(batch) or {}
    state = algo.generator.get_state()
    algo.train_step()
    algo.generator.set_state(state)
    obs, _, rewards, next_obs, _ = algo.buffer.sample(algo.config.batch_size, algo.generator)
    scale = lambda o: np.clip((o.numpy() - env.obs_rms.mean) / np.sqrt(env.obs_rms.var + 1e-8), -10, 10)  # noqa: E731
    np.testing.assert_allclose(seen[0][0].numpy(), scale(obs), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(seen[0][3].numpy(), scale(next_obs), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(seen[0][2].numpy(), rewards.numpy() / np.sqrt(env.ret_rms.var + 1e-8), rtol=1e-5)


def test_a_normalized_off_policy_run_exports_a_policy_on_raw_observations(tmp_path):
    run_dir = tmp_path / "sac"
    overrides = {"normalize": True, "learning_starts": 200, "hidden": "32,32"}
    train("sac", "pendulum", timesteps=400, seed=0, device="cpu", run_dir=run_dir, overrides=overrides, **QUIET)
    _, policy = load_policy(run_dir)
    assert isinstance(policy, NormalizedPolicy) and not torch.equal(policy.normalizer.mean, torch.zeros(3))
    raw = np.array([[1.0, 0.0, 6.0], [-0.5, 0.8, -7.0]], dtype=np.float32)
    with torch.no_grad():
        want = policy.act(torch.as_tensor(raw)).numpy()
    bundle = export_run(run_dir, tmp_path / "bundle")
    np.testing.assert_allclose(OnnxPolicy(bundle).act(raw), want, atol=1e-5)


@pytest.mark.skipif(
    not torch.cuda.is_available(), reason="no CUDA device here: the CUDA training path runs in benches/gpu_check.sh"
)
def test_a_gpu_learners_minibatch_is_normalised_with_the_statistics_of_that_moment():
    """A minibatch on the GPU is normalised as the same minibatch on the CPU, also after the statistics moved
    (the device's copy of the normaliser follows the env's)."""
    _, env = off_policy_steps("torch", normalize=True)
    batch = tuple(torch.randn(8, 3) if i in (0, 3) else torch.randn(8) for i in range(5))
    for _ in range(2):
        on_cpu = env.normalize_sample(batch)
        on_gpu = env.normalize_sample(tuple(t.cuda() for t in batch))
        for want, got in zip(on_cpu, on_gpu, strict=True):
            torch.testing.assert_close(got.cpu(), want)
        env.step(np.zeros((2, 1), np.float32))  # the statistics move


def test_the_normalisers_numpy_form_equals_its_torch_form_bit_for_bit():
    """The training env normalises each step's observations in numpy (`normalize_array`); evaluation, export and
    replay sampling use the module: the same float32 operations, the same values, clipping included."""
    rng = np.random.default_rng(0)
    normalizer = ObsNormalizer(rng.normal(size=5), rng.uniform(0.0, 4.0, size=5), 1e-8, 2.0)
    obs = rng.normal(0.0, 3.0, size=(64, 5)).astype(np.float32)
    with torch.no_grad():
        want = normalizer(torch.from_numpy(obs)).numpy()
    got = normalizer.normalize_array(obs)
    assert got.dtype == np.float32 and np.array_equal(got, want)
    assert (np.abs(want) == 2.0).any()  # some clipped
    normalizer.set_statistics(rng.normal(size=5), rng.uniform(0.0, 4.0, size=5))
    with torch.no_grad():
        assert np.array_equal(normalizer.normalize_array(obs), normalizer(torch.from_numpy(obs)).numpy())
