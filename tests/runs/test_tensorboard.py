"""TensorBoard: a run's records as scalars TensorBoard reads, written live or exported afterwards."""

from __future__ import annotations

import pytest
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

from thrust_app.cli import main as thrust_main
from thrust_app.runs.files import read_jsonl
from thrust_app.training.trainer import train


def scalars(run_dir) -> dict[str, list[tuple[int, float]]]:
    events = EventAccumulator(str(run_dir / "tb"))
    events.Reload()
    return {tag: [(e.step, e.value) for e in events.Scalars(tag)] for tag in events.Tags()["scalars"]}


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    run_dir = tmp_path_factory.mktemp("runs") / "ppo"
    train(
        "ppo",
        "cartpole",
        timesteps=2048,
        seed=0,
        device="cpu",
        run_dir=run_dir,
        eval_every=512,
        eval_episodes=2,
        overrides={"n_steps": 16},
        tensorboard=True,
        progress=False,
        log=lambda _: None,
    )
    return run_dir


#: What SB3's PPO writes that Thrust's PPO writes too, under the same names.
SHARED_WITH_SB3 = {
    "rollout/ep_rew_mean",
    "rollout/ep_len_mean",
    "time/fps",
    "train/policy_gradient_loss",
    "train/value_loss",
    "train/entropy_loss",
    "train/approx_kl",
    "train/clip_fraction",
    "train/learning_rate",
    "eval/mean_reward",
    "eval/mean_ep_length",
}


def test_a_run_with_tensorboard_on_writes_its_records_as_scalars(run):
    tags = scalars(run)
    records = read_jsonl(run / "metrics.jsonl")
    evals = [r for r in records if r["kind"] == "eval"]
    assert tags["eval/mean_reward"] == [(r["step"], pytest.approx(r["eval_mean"])) for r in evals]
    assert SHARED_WITH_SB3 <= set(tags)
    episodes = [ret for r in records if r["kind"] == "train" for ret in r["episode_returns"]]
    assert tags["rollout/ep_rew_mean"][-1][1] == pytest.approx(sum(episodes[-100:]) / len(episodes[-100:]))
    entropy = [r["losses"]["entropy"] for r in records if r["kind"] == "train" and "entropy" in r["losses"]]
    assert tags["train/entropy_loss"][-1][1] == pytest.approx(-entropy[-1])  # SB3 logs -entropy
    assert "--tensorboard" in (run / "config.json").read_text()


def test_the_tags_are_the_ones_sb3_writes(tmp_path):
    """SB3's own PPO with an EvalCallback, logged to TensorBoard: every shared tag is one of SB3's."""
    import stable_baselines3 as sb3
    from stable_baselines3.common.callbacks import EvalCallback

    model = sb3.PPO("MlpPolicy", "CartPole-v1", n_steps=128, batch_size=64, n_epochs=1, tensorboard_log=str(tmp_path))
    evaluation = EvalCallback(sb3.common.env_util.make_vec_env("CartPole-v1"), eval_freq=128, n_eval_episodes=1)
    model.learn(256, callback=evaluation, tb_log_name="sb3")
    events = EventAccumulator(str(next(tmp_path.glob("sb3_*"))))
    events.Reload()
    assert SHARED_WITH_SB3 <= set(events.Tags()["scalars"])


def test_tb_export_writes_the_same_scalars_again_without_duplicates(run, capsys):
    live = scalars(run)
    assert thrust_main(["tb-export", str(run.parent)]) == 0
    assert "tensorboard --logdir" in capsys.readouterr().out
    assert thrust_main(["tb-export", str(run)]) == 0  # twice: replaced, not appended
    exported = scalars(run)
    assert exported.keys() == live.keys()
    for tag in live:
        assert [step for step, _ in exported[tag]] == [step for step, _ in live[tag]]
