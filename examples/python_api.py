"""Thrust from Python, the way a notebook uses it (each `# %%` is a cell in Jupyter or VS Code).

A gymnasium env with a wrapper goes straight into `PPO(...)`; `learn` trains it in an ordinary run folder
(the dashboard and `thrust compare` see it) with a tqdm bar that renders in Jupyter, keeping the best
evaluated policy; `plot()` draws the learning curve; the model saves to one zip, loads back, predicts with
SB3's conventions and exports its ONNX bundle. Run:

    python examples/python_api.py
"""

# %% A wrapped gymnasium env, and a model of it
from __future__ import annotations

import tempfile
from pathlib import Path

import gymnasium as gym
import numpy as np

from thrust_app import PPO, KeepBest, StopAtReturn
from thrust_app.interop.bundle import OnnxPolicy

workdir = Path(tempfile.mkdtemp(prefix="thrust-api-"))
env = gym.wrappers.TimeAwareObservation(gym.make("CartPole-v1"), normalize_time=True)  # time left as a fifth input
model = PPO(env, runs_root=workdir / "runs", n_envs=8, n_steps=32, verbose=0, eval_every=2048)
print(f"env {model.env_id}: observations {model.algo.obs_shape}, config n_envs={model.spec.config['n_envs']}")

# %% Learn, keeping the best evaluation's policy, stopping once an evaluation is solved
keep = KeepBest()
model.learn(60_000, callback=[keep, StopAtReturn(475)])
print(f"trained {model.num_timesteps:,} steps in {model.run_dir.name}")
print(f"best evaluation {keep.best_mean:.1f} at step {keep.best_step:,}")

# %% The learning curve (in a notebook, the chart shows itself; here it goes to an HTML file)
model.plot().save(str(workdir / "curve.html"))
print(f"curve: {workdir / 'curve.html'}")

# %% Save, load, and play an episode with SB3's predict
path = model.save(workdir / "cartpole-timeaware.zip")
best = PPO.load(model.run_dir, checkpoint="best")
loaded = PPO.load(path)
obs, _ = env.reset(seed=7)
total, done = 0.0, False
while not done:
    action, _ = loaded.predict(obs, deterministic=True)
    obs, reward, terminated, truncated, _ = env.step(int(action))
    total, done = total + float(reward), terminated or truncated
print(f"episode return with the loaded model: {total:.0f}")
print(f"evaluation over 10 episodes: last {loaded.evaluate(10).mean:.1f}, best {best.evaluate(10).mean:.1f}")

# %% The ONNX bundle, as the player and `thrust eval` run it
bundle = model.export(workdir / "bundle")
probe = np.random.default_rng(0).normal(size=(200, 5)).astype(np.float32)
same = np.array_equal(OnnxPolicy(bundle).act(probe), model.predict(probe)[0])
print(f"bundle {bundle.path.name}: onnxruntime's actions equal predict's on 200 observations: {same}")
