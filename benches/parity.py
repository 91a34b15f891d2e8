"""Learning parity: every preset Thrust ships, Thrust and Stable-Baselines3 side by side on the same settings.

Each row is one (algorithm, env) preset (the rows of benches/validation.py). Thrust trains with the
preset; SB3 2.9.2 trains with the same values, translated field by field from Thrust's resolved config
(`sb3_settings`), on gymnasium's env where Thrust's is its twin (CartPole-v1, Pendulum-v1) and on
Thrust's own registered gymnasium env otherwise (bandit, the card game, Snake; Snake's CNN is Thrust's,
handed to SB3 as its features extractor; the card game's action masks go to sb3-contrib's MaskablePPO).
A setting SB3 cannot express is named under the table, never dropped silently. Both sides evaluate with
the same function on the same episodes: 10 deterministic episodes every 5k steps (500 on the bandit) on the env
Thrust's trainer evaluates on (a twin starts where gymnasium's env starts with the same seed, and steps by Thrust's
core), and the final policy on 50 fresh episodes (1000 on the bandit) of the env SB3 trains on.

Per row, over the seeds: the final-eval IQM (interquartile mean, rliable's aggregate) of each side with
its 95% percentile-bootstrap CI, P(Thrust >= SB3) (rliable's probability of improvement: the share of
(Thrust seed, SB3 seed) pairs where Thrust's final eval is higher, ties counting one half), both from
`thrust compare`'s own statistics (thrust_app/runs/compare.py), how many seeds end at the target, and
the median steps to the first evaluation that reached it. A row is at parity when P >= 0.5 and
Thrust's IQM is inside or above SB3's CI.

Results accumulate in .bench/parity.json (an interrupted bench continues); the table goes into
docs/validation.md and the headline rows into the README, between their `parity` markers. Rows the table
already has and this machine's results lack (run elsewhere, or not named by `--only`) are kept as written.

    python benches/parity.py                           # every row, 5 seeds, 2 runs in parallel
    python benches/parity.py --only dqn:cartpole --seeds 10
    python benches/parity.py --only dqn:cartpole --thrust-set double_dqn=True --label double   # an A/B variant
    python benches/parity.py --only ppo:HalfCheetah-v5 sac:Hopper-v5 --seeds 3    # MuJoCo rows, named only
    python benches/parity.py --only recurrent_ppo:cartpole-novel     # against sb3-contrib's RecurrentPPO
    python benches/parity.py --only ppo:cards     # action masks: against sb3-contrib's MaskablePPO
    python benches/parity.py --only ppo:pendulum:no-sde   # a preset row alone (ppo:pendulum: both rows)
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
import multiprocessing as mp
import platform
import re
import statistics
import sys
import tempfile
import time
from pathlib import Path

from harness import RecurrentPredict, hold_results, read_block, replace_block, save_results
from validation import BUDGETS, PAIRS, ROOT, value_format

from thrust_app.runs.compare import group_stats, probability_of_improvement

#: validation's rows but its image rows on MinAtar, which are long (below)
PAIRED = [pair for pair in PAIRS if not pair[1].startswith("MinAtar/")]
#: Rows run only when named with --only (an hour or more each on 2 cores): the MuJoCo presets (no target), and
#: MinAtar's with validation's targets (SB3 trains in the same pipeline, Thrust's CNN as its features extractor).
MUJOCO = ("HalfCheetah-v5", "Hopper-v5", "Walker2d-v5", "Ant-v5", "Humanoid-v5")
NAMED_ONLY = [(algo, env, None, "reported") for env in MUJOCO for algo in ("ppo", "a2c", "sac", "td3")]
NAMED_ONLY += [pair for pair in PAIRS if pair[1].startswith("MinAtar/")]
#: ... and the presets whose runs take half an hour or more on either side: recurrent PPO on PendulumNoVel (an LSTM
#: over 100k steps; validation's Thrust runs took about 28 min each), TD3 and DDPG on MountainCarContinuous (the
#: zoo's 300k steps, one gradient step of a 400x300 net per env step).
NAMED_ONLY += [
    ("recurrent_ppo", "pendulum-novel", -300.0, "eval >= -300 within 100k steps"),
    ("td3", "mountaincar-continuous", 90.0, "eval >= 90 (gymnasium's threshold) within 300k steps"),
    ("ddpg", "mountaincar-continuous", 90.0, "eval >= 90 (gymnasium's threshold) within 300k steps"),
]
#: Step budgets below the preset's: the MuJoCo rows of SAC and TD3 at 100k steps (the presets' 1M is a day per row
#: here); PPO and A2C train their presets' 1M; MinAtar's rows validation's budgets (the presets' 5M would be days).
BUDGET = dict.fromkeys([(algo, env) for env in MUJOCO for algo in ("sac", "td3")], 100_000)
BUDGET |= {pair: steps for pair, steps in BUDGETS.items() if pair[1].startswith("MinAtar/")}
#: sb3-contrib's RecurrentPPO against Thrust's recurrent PPO on the zoo's memory test (Thrust on its batched twin).
RECURRENT = [("recurrent_ppo", "cartpole-novel", 450.0, "eval >= 450 within 100k steps")]
#: Goal envs with HER (gymnasium-robotics' FetchReach; SB3's HerReplayBuffer on the SB3 side). Return = -(steps away
#: from the goal): a solved episode scores about -2, a random one about -49.
GOAL_ROWS = [("sac", "FetchReach-v4", -5.0, "HER: final eval >= -5 of 50 steps (random: about -49)")]
#: The zoo's PPO presets on gymnasium's other classic-control envs (their twins; solved at gymnasium's threshold).
CLASSIC = [
    ("ppo", "acrobot", -100.0, "eval >= -100 (gymnasium's threshold) within 1M steps"),
    ("ppo", "mountaincar", -110.0, "eval >= -110 (gymnasium's threshold) within 1M steps"),
    ("ppo", "mountaincar-continuous", 90.0, "eval >= 90 (gymnasium's threshold) within 20k steps"),
    ("a2c", "acrobot", -100.0, "eval >= -100 (gymnasium's threshold) within 500k steps"),
]
#: sb3-contrib's MaskablePPO against Thrust's PPO on an env with action masks (Thrust's card game, its `action_masks()`
#: read by both; a move outside the hand scores -1).
MASKED = [("ppo", "cards", 19.0, "eval >= 19 of 20 turns within 12,288 steps (random legal play: about 6.7)")]
ROWS = PAIRED + CLASSIC + RECURRENT + MASKED + GOAL_ROWS + NAMED_ONLY
#: Named presets with settings of their own (not only another evaluation interval), run with the rows above.
PRESET_ROWS = [("dqn", "cartpole", 475.0, "annealed"), ("ppo", "pendulum", -300.0, "no-sde")]

#: Final-evaluation episodes (the bandit's episodes are one step long, so many more of them).
FINAL_EPISODES = {"bandit": 1000} | dict.fromkeys(MUJOCO, 10)
FINAL_SEED = 2_000_000
EVAL_EVERY = (
    {"bandit": 500, "FetchReach-v4": 2000, "mountaincar-continuous": 1000, "cards": 1000}
    | dict.fromkeys((*MUJOCO, "acrobot", "mountaincar"), 50_000)
    | dict.fromkeys((env for _, env, _, _ in PAIRS if env.startswith("MinAtar/")), 25_000)
)
#: Where a row evaluates at another interval than its env's other rows: TD3's and DDPG's 300k on MountainCarContinuous.
EVAL_EVERY_BY_ROW = dict.fromkeys([("td3", "mountaincar-continuous"), ("ddpg", "mountaincar-continuous")], 10_000)
#: Thrust settings that change how fast it computes, not what it learns: no SB3 counterpart needed.
SPEED_FIELDS = ("acting", "update", "cuda_graphs")


@dataclasses.dataclass(frozen=True)
class Job:
    algo: str
    env: str
    lib: str  #: "thrust" or "sb3"
    seed: int
    #: A Thrust variant for A/B experiments: its label and its --set values (SB3 runs have none).
    label: str = "preset"
    thrust_set: tuple[str, ...] = ()
    #: The pair's preset both sides train with: its default one, or a named one.
    preset: str = "default"

    @property
    def key(self) -> tuple:
        return result_key(dataclasses.asdict(self))


def result_key(run: dict) -> tuple:
    return (run["algo"], run["env"], run.get("preset", "default"), run["lib"], run["label"], run["seed"])


def thrust_config(algo: str, env: str, overrides: list[str], preset: str = "default") -> tuple[str, dict, int]:
    """(Thrust env id, the run's whole config, its step budget) for a preset with `overrides` (KEY=VALUE)."""
    from thrust_app.training.run_spec import make_spec

    spec = make_spec(algo, env, device="cpu", overrides=overrides, preset=preset)
    return spec.env, spec.config, min(spec.timesteps, BUDGET.get((algo, env), spec.timesteps))


def sb3_env_id(thrust_env: str) -> str:
    """The env SB3 trains on: gymnasium's own where Thrust's is its tested twin, else Thrust's registered one."""
    from thrust_app.envs import GYMNASIUM_TWINS

    return {thrust: gym for gym, thrust in GYMNASIUM_TWINS.items()}.get(thrust_env, thrust_env)


#: Settings with the same name and meaning in Thrust and in SB3's constructor, per algorithm.
_ON_POLICY = (
    "n_steps",
    "gae_lambda",
    "ent_coef",
    "vf_coef",
    "max_grad_norm",
    "normalize_advantage",
    "use_sde",
    "sde_sample_freq",
)
_OFF_POLICY = ("buffer_size", "learning_starts", "batch_size", "train_freq", "gradient_steps", "tau")
SAME_NAMES = {
    "ppo": (*_ON_POLICY, "batch_size", "n_epochs"),
    "a2c": (*_ON_POLICY, "rms_prop_eps"),
    "dqn": (
        *_OFF_POLICY,
        "target_update_interval",
        "exploration_fraction",
        "exploration_initial_eps",
        "exploration_final_eps",
        "max_grad_norm",
    ),
    "sac": _OFF_POLICY,
    "td3": (*_OFF_POLICY, "policy_delay", "target_policy_noise", "target_noise_clip"),
    "ddpg": _OFF_POLICY,
}
SAME_NAMES["recurrent_ppo"] = SAME_NAMES["ppo"]


def sb3_settings(
    algo: str, config: dict, image: bool, action_dim: int = 1, masked: bool = False
) -> tuple[dict, int, list[str]]:
    """(SB3 constructor kwargs, n_envs, the settings SB3 cannot express) for a Thrust config; `masked`: for
    sb3-contrib's MaskablePPO (an env with action masks), which has no gSDE and no Gaussian's log_std_init."""
    c = config
    kwargs = {key: c[key] for key in SAME_NAMES[algo]} | {"gamma": c["gamma"]}
    kwargs["learning_rate"] = schedule(c["learning_rate"], c["lr_schedule"])
    kwargs["policy_kwargs"] = policy_kwargs(algo, c, image)
    if masked:
        del kwargs["use_sde"], kwargs["sde_sample_freq"], kwargs["policy_kwargs"]["log_std_init"]
    if algo in ("ppo", "recurrent_ppo"):
        kwargs["clip_range"] = schedule(c["clip_range"], c["clip_schedule"])
        kwargs |= {"clip_range_vf": c["clip_range_vf"] or None, "target_kl": c["target_kl"] or None}
    if algo == "sac":
        kwargs["ent_coef"] = f"auto_{c['init_alpha']}" if c["auto_alpha"] else c["init_alpha"]
        kwargs["target_entropy"] = c["target_entropy"] or "auto"
    if algo in ("td3", "ddpg"):
        kwargs["action_noise"] = sb3_action_noise(c["noise_type"], c["noise_std"], action_dim)
    if c.get("replay_buffer_class") == "HerReplayBuffer":
        from stable_baselines3 import HerReplayBuffer

        her = {"n_sampled_goal": c["n_sampled_goal"], "goal_selection_strategy": c["goal_selection_strategy"]}
        kwargs |= {"replay_buffer_class": HerReplayBuffer, "replay_buffer_kwargs": her}
    return kwargs, c["n_envs"], sb3_gaps(algo, c, masked)


def policy_kwargs(algo: str, c: dict, image: bool) -> dict:
    """SB3's policy_kwargs for Thrust's network settings."""
    import torch

    if image:  # Thrust's small CNN as SB3's features extractor, heads straight on its features
        from thrust_app.interop.sb3_export import thrust_cnn_extractor

        kwargs: dict = {"features_extractor_class": thrust_cnn_extractor(), "net_arch": []}
    else:
        kwargs = {"net_arch": list(c["hidden"])}
    if algo in ("ppo", "a2c", "recurrent_ppo"):
        kwargs["activation_fn"] = {"tanh": torch.nn.Tanh, "relu": torch.nn.ReLU}[c["activation"]]
        kwargs["log_std_init"] = c["log_std_init"]
        kwargs["ortho_init"] = c["ortho_init"]
    if algo == "recurrent_ppo":  # sb3-contrib's MlpLstmPolicy
        kwargs |= {"lstm_hidden_size": c["lstm_hidden_size"], "n_lstm_layers": c["n_lstm_layers"]}
        kwargs |= {"enable_critic_lstm": c["critic_rnn"] == "separate", "shared_lstm": c["critic_rnn"] == "shared"}
    if algo in ("td3", "sac"):
        kwargs["n_critics"] = c["n_critics"]
    return kwargs


def sb3_gaps(algo: str, c: dict, masked: bool = False) -> list[str]:
    """The Thrust settings in `c` that SB3 cannot express, one line each."""
    gaps = []
    if masked and c["use_sde"]:
        gaps.append("use_sde=True (sb3-contrib's MaskablePPO has no gSDE)")
    if algo == "dqn" and c["double_dqn"]:
        gaps.append("double_dqn=True (SB3's DQN has no double-Q target)")
    if algo == "dqn" and c["loss"] != "huber":
        gaps.append(f"loss={c['loss']} (SB3's DQN uses the Huber loss)")
    if algo == "recurrent_ppo" and c["rnn_type"] != "lstm":
        gaps.append(f"rnn_type={c['rnn_type']} (sb3-contrib's RecurrentPPO has an LSTM only)")
    if algo == "ddpg" and (c["policy_delay"], c["target_noise_clip"], c["n_critics"]) != (1, 0.0, 1):
        gaps.append("policy_delay, target_noise_clip, n_critics other than DDPG's 1, 0, 1 (SB3's DDPG fixes them)")
    return gaps


def schedule(value: float, kind: str):
    """A Thrust value and its schedule as SB3 takes it: the value, or a function of the progress left."""
    return linear(value) if kind == "linear" else value


def sb3_action_noise(kind: str, std: float, action_dim: int):
    """SB3's action noise object for Thrust's noise_type and noise_std (None for "none")."""
    import numpy as np
    from stable_baselines3.common.noise import NormalActionNoise, OrnsteinUhlenbeckActionNoise

    mean, sigma = np.zeros(action_dim), std * np.ones(action_dim)
    if kind == "none":
        return None
    return (NormalActionNoise if kind == "normal" else OrnsteinUhlenbeckActionNoise)(mean, sigma)


def linear(start: float):
    """SB3's linear schedule: `start` at the beginning of training, 0 at the end."""
    return lambda progress_remaining: progress_remaining * start


def run_job(job: Job) -> dict:
    """One training run of either library; its evaluations, final evaluation and wall time."""
    import torch

    from thrust_app.envs.pipeline import Pipeline
    from thrust_app.training.evaluation import evaluate
    from thrust_app.training.trainer import EVAL_SEED_OFFSET

    torch.set_num_threads(1)
    thrust_env, config, budget = thrust_config(job.algo, job.env, list(job.thrust_set), job.preset)
    eval_every = EVAL_EVERY_BY_ROW.get((job.algo, job.env), EVAL_EVERY.get(job.env, 5000))
    evals: list[tuple[int, float]] = []
    start = time.monotonic()
    runner = run_thrust if job.lib == "thrust" else run_sb3
    act, steps, gaps, env_id = runner(job, thrust_env, config, budget, eval_every, evals, EVAL_SEED_OFFSET)
    with torch.no_grad():
        final = evaluate(act, env_id, FINAL_EPISODES.get(job.env, 50), FINAL_SEED, pipeline=Pipeline.of(config))
    return dataclasses.asdict(job) | {
        "steps": steps,
        "wall_s": time.monotonic() - start,
        "evals": evals,
        "final_mean": final.mean,
        "final_success": final.success_rate,
        "gaps": gaps,
        "run_on": time.strftime("%Y-%m-%d"),
    }


def run_thrust(job: Job, thrust_env, config, budget, eval_every, evals, _offset):
    from harness import stop_if_signalled

    from thrust_app.algos.base import NumpyPolicy
    from thrust_app.training.trainer import load_policy, train

    with tempfile.TemporaryDirectory() as tmp:
        summary = stop_if_signalled(
            train(
                job.algo,
                job.env,
                timesteps=budget,
                preset=job.preset,
                seed=job.seed,
                device="cpu",
                run_dir=Path(tmp) / "run",
                overrides=list(job.thrust_set),
                eval_every=eval_every,
                eval_episodes=10,
                progress=False,
                log=lambda _: None,
                on_record=lambda r: evals.append((r["step"], r["eval_mean"])) if r["kind"] == "eval" else None,
            )
        )
        _, policy = load_policy(Path(tmp) / "run")
    return NumpyPolicy(policy), summary["timesteps"], [], sb3_env_id(thrust_env)


def run_sb3(job: Job, thrust_env, config, budget, eval_every, evals, offset):
    from stable_baselines3.common.callbacks import BaseCallback

    from thrust_app.envs.pipeline import Pipeline
    from thrust_app.training.evaluation import evaluate

    model, act, gaps, env_id = sb3_model(job, thrust_env, config)
    pipeline = Pipeline.of(config)

    class Evaluations(BaseCallback):
        """Thrust's evaluation every `eval_every` env steps, on the env and seeds Thrust's trainer evaluates on: the
        episodes Thrust's run plays at its evaluations (steps to target and the late read compare them)."""

        next_eval = eval_every

        def _on_step(self) -> bool:
            if self.num_timesteps >= self.next_eval:
                result = evaluate(act, thrust_env, 10, job.seed + offset, pipeline=pipeline)
                evals.append((self.num_timesteps, result.mean))
                self.next_eval += eval_every
            return True

    model.learn(total_timesteps=budget, callback=Evaluations())
    return act, model.num_timesteps, gaps, env_id


def sb3_model(job: Job, thrust_env: str, config: dict):
    """SB3's (or sb3-contrib's) model for `job`: Thrust's preset translated field by field (`sb3_settings`), on the
    gymnasium twin of Thrust's env, in the preset's pipeline (MinAtar's channels first, Atari's preprocessing) and
    in VecNormalize when the preset normalises; on an env with action masks, sb3-contrib's MaskablePPO. Returns
    (model, its deterministic policy on raw observations, what SB3 cannot express, the gymnasium env id)."""
    import gymnasium as gym
    import numpy as np
    import stable_baselines3 as sb3
    from stable_baselines3.common.env_util import make_vec_env
    from stable_baselines3.common.logger import Logger
    from stable_baselines3.common.vec_env import VecNormalize

    from thrust_app.envs import env_observation_parts, env_parted_space, env_spaces
    from thrust_app.envs.gym_adapter import register_envs
    from thrust_app.envs.pipeline import Pipeline, register_on_demand

    register_envs()
    env_id = sb3_env_id(thrust_env)
    register_on_demand(env_id)
    pipeline = Pipeline.of(config)
    obs_space, action_space = env_spaces(thrust_env, pipeline)
    parts = env_observation_parts(thrust_env) if len(obs_space.shape) == 1 else None  # a Dict: SB3 reads it whole
    dict_space = env_parted_space(thrust_env) if parts else None
    action_dim = math.prod(getattr(action_space, "shape", ()) or (1,))
    masked = offers_masks(env_id)
    if masked and job.algo != "ppo":
        raise ValueError(f"{env_id} masks its actions: sb3-contrib has a masked PPO (MaskablePPO) only, no {job.algo}")
    kwargs, n_envs, gaps = sb3_settings(job.algo, config, len(obs_space.shape) == 3, action_dim, masked)

    def normalize(obs):  # raw observations as the model sees them (VecNormalize's statistics as they are)
        return env.normalize_obs(as_dict(obs)) if config["normalize"] else as_dict(obs)

    def as_dict(obs):  # Thrust's flat observations (a batch) as the env's Dict, for SB3's MultiInputPolicy
        if not parts:
            return obs
        rows = [gym.spaces.unflatten(dict_space, row) for row in obs]  # a Discrete's one-hot back to its index
        return {key: np.stack([row[key] for row in rows]) for key in dict_space}

    def act(obs, masks=None):  # the deterministic policy (among the allowed actions where the env masks them)
        allowed = {} if masks is None else {"action_masks": masks}
        return model.predict(normalize(obs), deterministic=True, **allowed)[0]

    # the env as Thrust's training makes it: Thrust's pipeline with its training-only steps (Atari's lives, reward sign)
    wrap = lambda env: pipeline.wrap(env, training=True)  # noqa: E731
    env = make_vec_env(env_id, n_envs=n_envs, seed=job.seed, env_kwargs=pipeline.make_kwargs(env_id), wrapper_class=wrap)
    if config["normalize"]:
        env = VecNormalize(
            env,
            norm_obs=config["norm_obs"],
            norm_reward=config["norm_reward"],
            clip_obs=config["clip_obs"],
            clip_reward=config["clip_reward"],
            gamma=config["gamma"],
            epsilon=config["norm_epsilon"],
        )
    policy = "MultiInputPolicy" if parts else "MlpPolicy"
    if job.algo == "recurrent_ppo":  # a recurrent policy's act carries its memory (RecurrentPredict)
        import sb3_contrib

        model = sb3_contrib.RecurrentPPO("MlpLstmPolicy", env, seed=job.seed, device="cpu", verbose=0, **kwargs)
        act = RecurrentPredict(model, normalize)
    elif masked:
        import sb3_contrib

        model = sb3_contrib.MaskablePPO(policy, env, seed=job.seed, device="cpu", verbose=0, **kwargs)
    else:
        model = getattr(sb3, job.algo.upper())(policy, env, seed=job.seed, device="cpu", verbose=0, **kwargs)
    model.set_logger(Logger(None, []))  # SB3's default logger makes a /tmp/SB3-<time> folder on every learn()
    return model, act, gaps, env_id


def offers_masks(env_id: str) -> bool:
    """True for an env with an `action_masks()` method, the way sb3-contrib's MaskablePPO reads its masks."""
    from thrust_app.envs import make_env
    from thrust_app.envs.vec import has_mask_method

    env = make_env(env_id)
    try:
        return has_mask_method(env)
    finally:
        env.close()


# ---------------------------------------------------------------------------------------------- statistics


def steps_to_target(run: dict, target: float | None) -> int | None:
    return next((step for step, mean in run["evals"] if target is not None and mean >= target), None)


#: The late read of a run: its evaluations past this share of its budget, averaged (a steadier read than the final
#: evaluation alone where returns dip between evaluations, as on Hopper), shown where each run has LATE_EVALS of them.
LATE_SHARE, LATE_EVALS = 0.75, 3


def late_evals(run: dict) -> list[float]:
    """A run's evaluations in the last quarter of its budget."""
    return [mean for step, mean in run["evals"] if step > LATE_SHARE * run["steps"]]


def late_read(thrust: list[dict], sb3: list[dict]) -> dict | None:
    """Both sides' late means per seed, their IQMs and P(Thrust >= SB3) on them; None where a run has too few."""
    evals = min(len(late_evals(run)) for run in thrust + sb3)
    if evals < LATE_EVALS:
        return None
    late = {lib: [statistics.fmean(late_evals(run)) for run in runs] for lib, runs in (("thrust", thrust), ("sb3", sb3))}
    iqm = {lib: group_stats(lib, values).iqm for lib, values in late.items()}
    return {"evals": evals, **late, "iqm": iqm, "p": probability_of_improvement(late["thrust"], late["sb3"])[0]}


#: The seeds both sides must have run for a row to be written (its CI needs two).
MIN_SEEDS = 2


def summarize(
    results: list[dict], algo: str, env: str, target: float | None, label: str, preset: str = "default"
) -> dict | None:
    """One table row: both sides' final-eval IQM with CIs, P(Thrust >= SB3), seeds solved, steps to target."""
    mine = lambda r, lib: result_key(r)[:4] == (algo, env, preset, lib)  # noqa: E731
    side = {lib: sorted((r for r in results if mine(r, lib)), key=lambda r: r["seed"]) for lib in ("thrust", "sb3")}
    side["thrust"] = [r for r in side["thrust"] if r["label"] == label]
    paired = {r["seed"] for r in side["thrust"]} & {r["seed"] for r in side["sb3"]}  # the seeds both sides ran
    side = {lib: [r for r in runs if r["seed"] in paired] for lib, runs in side.items()}
    if len(paired) < MIN_SEEDS:  # one seed a side has no interval and no verdict
        return None
    row = {"algo": algo, "env": env, "label": label, "target": target, "preset": preset}
    for lib, runs in side.items():
        finals = [r["final_mean"] for r in runs]
        reached = [s for s in (steps_to_target(r, target) for r in runs) if s is not None]
        final_stats = group_stats(lib, finals)
        row[lib] = {
            "seeds": len(runs),
            "finals": finals,
            "iqm": final_stats.iqm,
            "ci": final_stats.iqm_ci,
            "solved": None if target is None else sum(f >= target for f in finals),
            "reached": len(reached),
            "median_steps_to_target": statistics.median(reached) if reached else None,
            "wall_s": statistics.median(r["wall_s"] for r in runs),
            # a goal env's share of final episodes ending in success, over the seeds (None where the env reports none)
            "success": None if any(r.get("final_success") is None for r in runs) else [r["final_success"] for r in runs],
        }
    row["p_thrust_ge_sb3"], row["p_ci"] = probability_of_improvement(row["thrust"]["finals"], row["sb3"]["finals"])
    row["at_parity"] = row["p_thrust_ge_sb3"] >= 0.5 and row["thrust"]["iqm"] >= row["sb3"]["ci"][0]
    row["mann_whitney_p"] = mann_whitney_p(row["thrust"]["finals"], row["sb3"]["finals"])
    row["late"] = late_read(side["thrust"], side["sb3"])
    row["gaps"] = sorted({gap for r in side["sb3"] for gap in r["gaps"]})
    # the day its latest run finished ("": results recorded before runs carried their date)
    row["run_on"] = max((r.get("run_on", "") for r in side["thrust"] + side["sb3"]), default="")
    return row


def mann_whitney_p(thrust: list[float], sb3: list[float]) -> float:
    """Two-sided Mann-Whitney U test of the two sides' final evaluations (scipy's): the chance of seeds this far
    apart if both libraries learned alike. 1.0 where every value ties (no difference to test)."""
    from scipy.stats import mannwhitneyu

    if len(set(thrust) | set(sb3)) == 1:
        return 1.0
    return float(mannwhitneyu(thrust, sb3, alternative="two-sided").pvalue)


# ---------------------------------------------------------------------------------------------- report

SPREAD_HEAD = (
    "Rows short of parity, seed by seed, with a two-sided Mann-Whitney U test of the two sides' final evaluations "
    "(scipy): a p far above 0.05 says these seeds cannot tell Thrust's results from SB3's. Where every run "
    "evaluated at least 3 times in the last quarter of its budget, those evaluations' mean per seed follows (a "
    "steadier read than the final evaluation where returns dip between evaluations), with its IQM and P."
)


TABLE_HEAD = [
    "| algo | env | seeds | Thrust final IQM [95% CI] | SB3 final IQM [95% CI] | P(Thrust >= SB3) | ends at "
    "target, Thrust / SB3 | steps to target, Thrust / SB3 (median) | parity | run on |",
    "|---|---|---:|---|---|---:|---:|---:|---|---|",
]


def table(rows: list[dict], when: str = "") -> list[str]:
    return TABLE_HEAD + [table_row(row, when) for row in rows]


def row_name(algo: str, env: str, label: str = "preset", preset: str = "default") -> str:
    """A row's first two cells, `| algo (variant), preset NAME | env |`: what names it in the written table."""
    variant = "" if label == "preset" else f" ({label})"
    variant += "" if preset == "default" else f", preset {preset}"
    return f"| {algo}{variant} | {env} |"


def name_of(row: dict) -> str:
    """A results row's name in the table (`row_name`)."""
    return row_name(row["algo"], row["env"], row["label"], row["preset"])


def note_head(name: str) -> str:
    """How the notes under the table name a row (`name`: its first two cells, as `row_name` writes them): `- algo env:`,
    a variant or preset after the env (`- dqn cartpole, preset annealed:`), so a preset row's notes stay its own."""
    first, env = (cell.strip() for cell in name.split("|")[1:3])
    algo = re.match(r"\w+", first)[0]
    return f"- {algo} {env}{first[len(algo) :]}:"


@dataclasses.dataclass
class KeptRow:
    """A row an earlier run wrote into the parity table and this run has no results for: its table line and the
    notes under the table that name it (`note_head`)."""

    line: str
    gaps: list[str]
    successes: list[str]
    spreads: list[str] = dataclasses.field(default_factory=list)

    @property
    def at_parity(self) -> bool:
        return self.line.split("|")[9].strip() == "yes"


def kept_rows(out: Path, names: set[str]) -> dict[str, KeptRow]:
    """Per row name, the rows of `out`'s parity table that are not in `names` (this run's rows). The results
    live in one machine's .bench/, so a run with `--only`, or on another machine, must not drop the others."""
    kept: dict[str, KeptRow] = {}
    notes: dict[str, list[str]] = {"gaps": [], "successes": [], "spreads": []}
    section = None
    block = read_block(out, "parity")
    produced = next((line for line in block if line.startswith("Produced by")), "")
    dated = re.search(r"on (\d{4}-\d{2}-\d{2})", produced)  # a table from before the "run on" column: one run
    for line in block:
        if line.startswith("Settings SB3 cannot express"):
            section = "gaps"
        elif line.startswith("Success rates"):
            section = "successes"
        elif line.startswith(SPREAD_HEAD[:20]):
            section = "spreads"
        elif line.startswith("| ") and not line.startswith("| algo |"):  # a row, not the head
            name = "|".join(line.split("|")[:3]) + "|"
            if name not in names:
                undated = len(line.split("|")) == len(TABLE_HEAD[0].split("|")) - 1
                kept[name] = KeptRow(f"{line} {dated.group(1) if dated else 'not recorded'} |" if undated else line, [], [])
        elif line.startswith("- ") and section:
            notes[section].append(line)
    for name, row in kept.items():
        prefix = note_head(name)
        row.gaps = [note for note in notes["gaps"] if note.startswith(prefix)]
        row.successes = [note for note in notes["successes"] if note.startswith(prefix)]
        row.spreads = [note for note in notes["spreads"] if note.startswith(prefix)]
    return kept


def table_row(row: dict, when: str = "") -> str:
    fmt = value_format(row["env"])
    t, s = row["thrust"], row["sb3"]

    def cell(side: dict) -> str:
        return f"{fmt(side['iqm'])} [{fmt(side['ci'][0])}, {fmt(side['ci'][1])}]"

    def steps(side: dict) -> str:
        return "—" if side["median_steps_to_target"] is None else f"{side['median_steps_to_target']:,.0f}"

    ends = "—" if row["target"] is None else f"{t['solved']}/{t['seeds']} / {s['solved']}/{s['seeds']}"
    name = name_of(row)
    return (
        f"{name} {min(t['seeds'], s['seeds'])} | {cell(t)} | {cell(s)} "
        f"| {row['p_thrust_ge_sb3']:.2f} | {ends} | {steps(t)} / {steps(s)} "
        f"| {'yes' if row['at_parity'] else '**no**'} | {row.get('run_on') or when} |"
    )


def markdown(rows: list[dict], kept: dict[str, KeptRow], when: str) -> list[str]:
    """docs/validation.md's parity section: this run's rows and the kept ones, in ROWS order."""
    host = f"{platform.machine()}, {mp.cpu_count()} cores, Python {platform.python_version()}"
    gaps = [f"{note_head(name_of(row))} {'; '.join(row['gaps'])}" for row in rows if row["gaps"]]
    successes = [
        f"{note_head(name_of(row))} Thrust {success_text(row['thrust']['success'])}; SB3 {success_text(row['sb3']['success'])}"
        for row in rows
        if row["thrust"].get("success") and row["sb3"].get("success")
    ]
    spreads = [spread_text(row) for row in rows if not row["at_parity"]]
    gaps += [note for row in kept.values() for note in row.gaps if note not in gaps]
    successes += [note for row in kept.values() for note in row.successes if note not in successes]
    spreads += [note for row in kept.values() if not row.at_parity for note in row.spreads if note not in spreads]
    gaps, successes, spreads = (sorted(notes, key=table_position) for notes in (gaps, successes, spreads))
    ordered = table_lines(rows, kept, when)
    earlier = f"; {len(kept)} kept from earlier runs (their `run on` dates)" if kept else ""
    return [
        "## Parity with Stable-Baselines3, every preset",
        "",
        f"Produced by `python benches/parity.py` (`make validate`) on {when}: {len(rows)} row(s) from this machine's "
        f"results (each dated by its latest run){earlier}; host: "
        f"{host}; CPU, 1 torch thread per run, two runs in parallel, the same seeds on both sides. Thrust trains with "
        f"its preset, SB3 {sb3_version()} with the same values translated field by field (`sb3_settings` in the "
        "script), on gymnasium's CartPole-v1 / Pendulum-v1 / Acrobot-v1 / MountainCar(Continuous) where Thrust's "
        "env is their twin (Thrust's own bandit, card game and Snake, registered with gymnasium; the card game's action "
        "masks through sb3-contrib's MaskablePPO), and gymnasium-robotics' "
        "FetchReach-v4 with HER (SB3's HerReplayBuffer and MultiInputPolicy), MinAtar's Breakout in Thrust's pipeline "
        "(the grid channels first; Thrust's CNN as SB3's features extractor); a preset with `normalize: true` runs "
        "SB3 under VecNormalize with the same settings. "
        "Final eval: 50 fresh episodes (1000 on the bandit); IQM: interquartile mean over seeds, with a 95% "
        "bootstrap CI; *P(Thrust >= SB3)*: share of seed pairs where Thrust's final eval is at least SB3's "
        "(ties count one half); *ends at target*: seeds whose final eval reached the row's target (validation.py's); "
        "*steps to target*: the first evaluation (every 5k steps; 500 on the bandit, 1k on MountainCarContinuous (TD3's "
        "and DDPG's 10k) and the card game, 50k on "
        "Acrobot and MountainCar, 25k on MinAtar) that reached it, both sides' evaluations on the env and seeds Thrust's "
        "trainer evaluates on (before 2026-12-07 SB3's ran on gymnasium's env where Thrust's is a twin: other start "
        "states from the same seeds, so twin rows run earlier compare different episodes here and in the late read); "
        "*parity*: "
        "P >= 0.5 and Thrust's IQM inside or above SB3's CI. A named preset with settings of its own has its row "
        "(`annealed`, `no-sde`: both sides on its settings); the others train with these rows' settings (`fast` evaluates "
        "more often and stops at the solve) or need a GPU (`gpu`: 4,096 envs, 10M steps). Rows not listed were "
        "not run on this machine (Snake: a CNN for 300k steps, 15-25 min per run per side; the MuJoCo rows, run "
        "only when named, hours: SAC and TD3 at 100k steps, PPO and A2C at their presets' 1M, 10 final episodes; MinAtar's, "
        "named only too: validation's budgets, DQN 250k and PPO 500k steps; PPO's took 3.5 to 4.7 min a run on "
        "either side, two at a time, on a 2-core Xeon VM, DQN's 26 to 30 min a Thrust run and 30 to 61 min an SB3 run; "
        "recurrent PPO on PendulumNoVel and TD3 and DDPG on MountainCarContinuous, named only too: half an hour or "
        "more a run).",
        "",
        *TABLE_HEAD,
        *ordered,
        "",
        *(["Settings SB3 cannot express (the SB3 side runs without them):", "", *gaps, ""] if gaps else []),
        *(["Success rates of the final policies (goal envs' `is_success`):", "", *successes, ""] if successes else []),
        *([SPREAD_HEAD, "", *spreads, ""] if spreads else []),
        *([read_together(rows, kept), ""] if rows or kept else []),
    ]


def holm(p_values: list[float], tests: int) -> list[float]:
    """Holm's step-down adjusted p-values of `p_values`, in ascending order, among `tests` tests: the i-th smallest (from 0)
    times (tests - i), never below the one before it, at most 1. Tests not given count as larger p-values, which
    only makes the adjustment stricter."""
    adjusted, running = [], 0.0
    for i, p in enumerate(sorted(p_values)):
        running = max(running, min(1.0, (tests - i) * p))
        adjusted.append(running)
    return adjusted


def read_together(rows: list[dict], kept: dict[str, KeptRow]) -> str:
    """The table's rows read as one family of tests: of the rows where SB3 leads (P < 0.5), the smallest
    Mann-Whitney p and Holm's correction of it for the table's number of rows. When both libraries learn alike,
    P >= 0.5 on a row is about a coin flip, so rows short of parity are expected; a Holm-corrected p under 0.05 is
    what would say that one of them is not chance."""
    leads = [(note_head(name_of(r))[2:-1], r["mann_whitney_p"]) for r in rows if r["p_thrust_ge_sb3"] < 0.5]
    for name, row in kept.items():
        if float(row.line.split("|")[6]) < 0.5:
            p = next((float(m[1]) for note in row.spreads if (m := re.search(r": p = ([0-9.]+);", note))), None)
            leads.append((note_head(name)[2:-1], p))
    total = len(rows) + len(kept)
    tested = sorted((p, name) for name, p in leads if p is not None)
    text = f"Read together: SB3 leads (P < 0.5) on {len(leads)} of {total} rows."
    if tested:
        adjusted = holm([p for p, _ in tested], total)
        differ = sum(p < 0.05 for p in adjusted)
        text += (
            f" The smallest two-sided Mann-Whitney p among them is {tested[0][0]:.2f} ({tested[0][1]}), "
            f"{adjusted[0]:.2f} after Holm's correction for {total} rows: "
            + (f"{differ} row(s) differ from SB3 at the 5% level." if differ else "no row differs from SB3 at the 5% level.")
        )
    missing = [name for name, p in leads if p is None]
    if missing:
        text += f" No p is recorded for {', '.join(missing)} (written before the bench recorded one; a rerun adds it)."
    return text


def spread_text(row: dict) -> str:
    """A row's final evaluations per seed, both sides, and the Mann-Whitney p of their difference; with the late
    read where the runs evaluated often enough (`late_read`)."""
    finals = {lib: ", ".join(f"{value:.4g}" for value in row[lib]["finals"]) for lib in ("thrust", "sb3")}
    text = f"{note_head(name_of(row))} p = {row['mann_whitney_p']:.2f}; Thrust {finals['thrust']}; SB3 {finals['sb3']}"
    late = row.get("late")
    if late:
        means = {lib: ", ".join(f"{value:.4g}" for value in late[lib]) for lib in ("thrust", "sb3")}
        text += (
            f"; the last quarter's evaluations ({late['evals']}+ per run), averaged: Thrust {means['thrust']}; "
            f"SB3 {means['sb3']}; IQM {late['iqm']['thrust']:.4g} vs {late['iqm']['sb3']:.4g}, P {late['p']:.2f}"
        )
    return text


def table_lines(rows: list[dict], kept: dict[str, KeptRow], when: str = "") -> list[str]:
    """The table's lines, this run's rows and the kept ones, in the table's order."""
    lines = {name_of(r): table_row(r, when) for r in rows}
    lines |= {name: row.line for name, row in kept.items()}
    return [lines.pop(name) for name in table_order() if name in lines] + list(lines.values())


def table_order() -> list[str]:
    """Every row's name in the order the table lists them."""
    return [row_name(algo, env) for algo, env, _, _ in ROWS] + [row_name(a, e, "preset", p) for a, e, _, p in PRESET_ROWS]


def table_position(note: str) -> int:
    """Where a note's row (`- algo env...: ...`, `note_head`) stands in the table, a preset row's notes with its env's;
    notes of rows no longer listed go last."""
    row = re.match(r"- (\w+) ([^\s:,(]+)", note)
    envs = [(algo, env) for algo, env, _, _ in ROWS]
    return envs.index(row.groups()) if row and row.groups() in envs else len(envs)


def success_text(rates: list[float]) -> str:
    return f"{statistics.fmean(rates):.2f} (per seed {', '.join(f'{rate:.2f}' for rate in rates)})"


def sb3_version() -> str:
    import stable_baselines3

    return stable_baselines3.__version__


def readme_rows(rows: list[dict], kept: dict[str, KeptRow], readme: Path) -> list[str]:
    """README's parity rows: how many presets are at parity (this run's rows and the kept ones), DQN CartPole's
    rows (kept from the README as they are when this run has none), and a row per MuJoCo env."""
    at = sum(row["at_parity"] for row in rows) + sum(row.at_parity for row in kept.values())
    total = len(rows) + len(kept)
    lines = [f"| Parity with SB3 (benches/parity.py) | {at} of {total} presets at parity (docs/validation.md) |"]
    dqn = [row for row in rows if row["algo"] == "dqn" and row["env"] == "cartpole" and row["label"] == "preset"]
    for row in dqn:
        t, s = row["thrust"], row["sb3"]
        preset = "zoo preset" if row["preset"] == "default" else f"preset `{row['preset']}`"
        lines.append(
            f"| DQN CartPole, {preset} vs SB3 on its settings | ends solved on {t['solved']}/{t['seeds']} seeds vs "
            f"{s['solved']}/{s['seeds']}; final IQM {t['iqm']:.1f} vs {s['iqm']:.1f}; "
            f"P(Thrust >= SB3) {row['p_thrust_ge_sb3']:.2f} |"
        )
    if not dqn:
        lines += [line for line in read_block(readme, "parity") if line.startswith("| DQN CartPole")]
    return lines + mujoco_rows(table_lines(rows, kept))


def mujoco_rows(lines: list[str]) -> list[str]:
    """README's row per MuJoCo env in the table: each algorithm's final IQM against SB3's, its P(Thrust >= SB3),
    step budget and seeds, read from the table's lines (this run's and the kept ones alike)."""
    cells = [[cell.strip() for cell in line.split("|")[1:-1]] for line in lines]
    out = []
    for env in MUJOCO:
        found = [c for c in cells if c[1] == env and " " not in c[0]]  # the presets' rows, not a named variant's
        parts = [
            f"{algo.upper()} {thrust.split(' [')[0]} vs {sb3.split(' [')[0]} "
            f"(P {p}{'' if ok == 'yes' else ', short of parity'}; "
            f"{short_steps(thrust_config(algo, env, [])[2])} steps, {seeds} seeds)"
            for algo, _, seeds, thrust, sb3, p, _, _, ok, *_ in found
        ]
        if parts:
            out.append(f"| {env}, the zoo's presets vs SB3 (final IQM, Thrust vs SB3) | {'; '.join(parts)} |")
    return out


def short_steps(steps: int) -> str:
    """100k, 1M: a step budget as README's rows write it."""
    return f"{steps / 1e6:g}M" if steps >= 1_000_000 else f"{steps / 1e3:g}k"


# ---------------------------------------------------------------------------------------------- main


def all_rows(results: list[dict]) -> tuple[list[dict], list[dict]]:
    """Every row the results hold, the presets' and then the --thrust-set variants', each with all the seeds both
    sides ran (`summarize`): a run of one row with fewer seeds leaves another row's extra seeds in its row."""
    rows = [row for algo, env, target, _ in ROWS if (row := summarize(results, algo, env, target, "preset"))]
    rows += [row for a, e, target, p in PRESET_ROWS if (row := summarize(results, a, e, target, "preset", p))]
    variants = sorted({r["label"] for r in results} - {"preset"})
    extra = [row for algo, env, target, _ in ROWS for v in variants if (row := summarize(results, algo, env, target, v))]
    return rows, extra


def selected_rows(only: list[str] | None) -> list[tuple[str, str, str]]:
    """The (algo, env, preset) rows to run: every everyday row and preset row without `only`; with it, the rows
    it names, "algo:env" naming the env's default row and its preset rows, "algo:env:preset" one row alone (the
    default row's preset is "default")."""
    named = lambda *row: ":".join(row) in (only or ())  # noqa: E731
    default = lambda algo, env: named(algo, env) or named(algo, env, "default")  # noqa: E731
    everyday = PAIRED + CLASSIC + RECURRENT + MASKED + GOAL_ROWS
    rows = [(algo, env, "default") for algo, env, _, _ in everyday if not only or default(algo, env)]
    rows += [(algo, env, "default") for algo, env, _, _ in NAMED_ONLY if default(algo, env)]
    presets = [(algo, env, preset) for algo, env, _, preset in PRESET_ROWS]
    rows += [row for row in presets if not only or named(*row[:2]) or named(*row)]
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--jobs", type=int, default=2, help="runs in parallel (each uses one torch thread)")
    parser.add_argument(
        "--only", nargs="*", help="algo:env rows (dqn:cartpole), or one row alone: ppo:pendulum:no-sde, ppo:pendulum:default"
    )
    parser.add_argument("--thrust-set", nargs="*", default=[], metavar="KEY=VALUE", help="a Thrust variant to A/B")
    parser.add_argument("--label", default="preset", help="the variant's name in the results (with --thrust-set)")
    parser.add_argument("--results", type=Path, default=ROOT / ".bench" / "parity.json")
    parser.add_argument("--out", type=Path, default=ROOT / "docs" / "validation.md")
    parser.add_argument("--readme", type=Path, default=ROOT / "README.md")
    args = parser.parse_args()
    if args.thrust_set and args.label == "preset":
        parser.error("--thrust-set needs a --label naming the variant (the preset's own rows keep 'preset')")
    pairs = selected_rows(args.only)
    args.results.parent.mkdir(parents=True, exist_ok=True)
    hold_results(args.results)  # one writer per results file, until this process ends
    results = json.loads(args.results.read_text()) if args.results.exists() else []
    done = {result_key(r) for r in results}
    variant = tuple(args.thrust_set)
    jobs = [
        job
        for algo, env, preset in pairs
        for seed in range(args.seeds)
        for job in (Job(algo, env, "thrust", seed, args.label, variant, preset), Job(algo, env, "sb3", seed, preset=preset))
        if job.key not in done
    ]
    jobs.sort(key=lambda job: job.env in ("snake", "pendulum", "acrobot", "mountaincar"), reverse=True)  # longest first
    print(f"{len(jobs)} runs to do, {len(done)} already in {args.results}", flush=True)
    start = time.monotonic()
    with mp.get_context("spawn").Pool(args.jobs) as pool:
        for index, result in enumerate(pool.imap_unordered(run_job, jobs), 1):
            results.append(result)
            save_results(args.results, results)
            print(
                f"[{index}/{len(jobs)}, {time.monotonic() - start:.0f} s] {result['lib']} {result['algo']} "
                f"{result['env']} {result['label']} seed {result['seed']}: final {result['final_mean']:.3f}",
                flush=True,
            )
    rows, extra = all_rows(results)
    print("\n".join(table(rows + extra)))
    if rows and not args.thrust_set:
        when = time.strftime("%Y-%m-%d")
        kept = kept_rows(args.out, {name_of(r) for r in rows})
        replace_block(args.out, "parity", markdown(rows, kept, when))
        replace_block(args.readme, "parity", readme_rows(rows, kept, args.readme))
        print(f"wrote {args.out} and the parity rows of {args.readme}")


if __name__ == "__main__":
    sys.exit(main())
