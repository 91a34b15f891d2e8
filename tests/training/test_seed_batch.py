"""Seeds as one batch (training/seed_batch.py): a run folder per seed, each an ordinary run that equals the
lone run of its seed, resumes alone and leaves the batch when it is done; one-line refusals."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch

from thrust_app.cli import main as thrust_main
from thrust_app.config import ConfigError
from thrust_app.runs.files import LAST_CHECKPOINT, STOP_FILE, load_checkpoint
from thrust_app.training.run_spec import make_spec
from thrust_app.training.seed_batch import SeedBatch, SeedTrainer, global_stream, parse_seeds, train_seeds
from thrust_app.training.trainer import resume, train

ITERATION = 256  # the zoo's PPO CartPole: 8 envs x 32 steps


def last_eval(run_dir: str) -> tuple[list, list]:
    """The returns and lengths of the run's last evaluation in metrics.jsonl."""
    records = [json.loads(line) for line in (Path(run_dir) / "metrics.jsonl").read_text().splitlines()]
    last = [record for record in records if "eval_returns" in record][-1]
    return last["eval_returns"], last["eval_lengths"]


def test_each_seed_is_an_ordinary_run_equal_to_the_lone_run_of_its_seed(tmp_path):
    summaries = train_seeds(
        "ppo", "CartPole-v1", [0, 1], timesteps=3 * ITERATION, eval_every=3 * ITERATION, runs_root=tmp_path / "batch",
        progress=False, log=lambda line: None,
    )  # fmt: skip
    assert [(s["seed"], s["status"], s["timesteps"]) for s in summaries] == [(0, "finished", 768), (1, "finished", 768)]
    lone = train("ppo", "CartPole-v1", timesteps=3 * ITERATION, seed=1, eval_every=3 * ITERATION,
                 run_dir=tmp_path / "lone", progress=False, log=lambda line: None)  # fmt: skip
    batched, alone = (load_checkpoint(f"{s['run_dir']}/{LAST_CHECKPOINT}") for s in (summaries[1], lone))
    assert torch.equal(batched["torch_rng"], alone["torch_rng"])  # the seed drew its noise from the lone run's stream
    for name, value in alone["algo"]["net"].items():
        assert torch.allclose(batched["algo"]["net"][name], value, atol=1e-5), name
    # the batch evaluated its seeds together (one stacked forward per step): the lone run's episodes, return for return
    assert last_eval(summaries[1]["run_dir"]) == last_eval(lone["run_dir"])
    config = json.loads((tmp_path / "batch" / summaries[1]["run_dir"].split("/")[-1] / "config.json").read_text())
    assert config["seed"] == 1 and config["algo"] == "ppo"
    resumed = resume(summaries[0]["run_dir"], timesteps=4 * ITERATION, progress=False, log=lambda line: None)
    assert (resumed["status"], resumed["timesteps"]) == ("finished", 1024)  # a seed's folder resumes as a lone run


def test_a_seed_that_stops_leaves_the_batch_and_the_others_train_on(tmp_path):
    trainers, streams = [], []
    for seed in (0, 1, 2):
        spec = make_spec("a2c", "CartPole-v1", 400, seed, "cpu", 10_000, 2, None, None, None, 1, None, False, "default")
        (tmp_path / f"s{seed}").mkdir()
        trainers.append(SeedTrainer(spec, tmp_path / f"s{seed}", torch.device("cpu"), progress=False))
        streams.append(global_stream())
    (tmp_path / "s1" / STOP_FILE).write_text("")
    summaries = SeedBatch(trainers, streams, progress=False).run()
    assert [(s["status"], s["timesteps"]) for s in summaries] == [("finished", 400), ("stopped", 40), ("finished", 400)]
    lone = train("a2c", "CartPole-v1", timesteps=400, seed=2, eval_every=10_000, eval_episodes=2,
                 run_dir=tmp_path / "lone", progress=False, log=lambda line: None)  # fmt: skip
    batched, alone = (load_checkpoint(f"{s['run_dir']}/{LAST_CHECKPOINT}") for s in (summaries[2], lone))
    for name, value in alone["algo"]["net"].items():  # restacked without seed 1, seed 2 went on as it would alone
        assert torch.allclose(batched["algo"]["net"][name], value, atol=1e-5), name


def test_seed_ranges_parse_and_bad_ones_are_refused_in_one_line():
    assert parse_seeds("0-3") == [0, 1, 2, 3]
    assert parse_seeds("3,5, 8") == [3, 5, 8]
    assert parse_seeds("0-1,100-101") == [0, 1, 100, 101]
    refusals = (("3-1", "write a range"), ("a-b", "write a range"), ("1,1", "names a seed twice"), ("0-9999", "at most"))
    for text, says in refusals:
        with pytest.raises(ConfigError, match=says):
            parse_seeds(text)


@pytest.mark.parametrize(
    "algo, env, overrides, says",
    [
        ("dqn", "CartPole-v1", None, "dqn has no batched form"),
        ("ppo", "Pendulum-v1", None, "without gSDE"),
        ("ppo", "CartPole-v1", ["target_kl=0.01"], "target_kl"),
        ("a2c", "CartPole-v1", ["vf_hidden=[32]"], "one shape"),
    ],
)
def test_runs_the_batch_cannot_serve_are_refused_before_any_folder_is_made(algo, env, overrides, says, tmp_path):
    with pytest.raises(ConfigError, match=f"{says}.*thrust sweep"):
        train_seeds(algo, env, [0, 1], overrides=overrides, runs_root=tmp_path, progress=False, log=lambda line: None)
    assert not any(tmp_path.iterdir())


def test_the_cli_trains_seeds_as_a_batch_and_says_how_to_compare_them(tmp_path, capsys):
    root = tmp_path / "runs"
    args = ["train", "a2c", "CartPole-v1", "--seeds", "0-1", "--timesteps", "80", "--runs-root", str(root), "--quiet"]
    assert thrust_main(args) == 0
    out = capsys.readouterr().out
    assert "seed 0: a2c CartPole-v1: finished after 80 steps" in out and "seed 1: a2c CartPole-v1" in out
    assert f"thrust compare {root}" in out
    assert len(list(root.iterdir())) == 2
    assert thrust_main([*args, "--run-dir", str(tmp_path / "x")]) == 2
    assert "give no --resume or --run-dir" in capsys.readouterr().err
