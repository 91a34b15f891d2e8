"""Faults and bad input, as an adversarial user meets them: every case ends in one line that names the
problem and the fix, or in the documented behaviour (docs/reliability.md), and nothing already written is lost."""

from __future__ import annotations

import errno
import json
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
import torch

from thrust_app.cli import main as thrust_main
from thrust_app.dashboard import jobs
from thrust_app.interop.bundle import OnnxPolicy, load_bundle
from thrust_app.interop.exporter import ParityError, export_run
from thrust_app.runs.files import LAST_CHECKPOINT, load_checkpoint, read_jsonl, save_checkpoint
from thrust_app.runs.lock import RunLock, is_locked
from thrust_app.training.trainer import resume, train
from thrust_app.web.server import bundle_index

QUIET = {"progress": False, "log": lambda _: None}

#: A short PPO CartPole run that checkpoints often, started in a child process by `start_training`.
TRAIN_SCRIPT = """
import sys
from thrust_app.training.trainer import train
train("ppo", "cartpole", timesteps=int(sys.argv[2]), seed=3, device="cpu", run_dir=sys.argv[1], eval_every=2048,
      eval_episodes=2, checkpoint_every=1024, overrides={"n_steps": 16}, progress=False)
"""


def start_training(run_dir: Path, timesteps: int = 12_288) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-c", TRAIN_SCRIPT, str(run_dir), str(timesteps)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        start_new_session=True,
    )


def wait_for(condition, seconds: float) -> None:
    deadline = time.time() + seconds
    while not condition():
        assert time.time() < deadline, "timed out"
        time.sleep(0.05)


def comparable(records):
    return [{k: v for k, v in r.items() if k not in ("wall_s", "train_s", "sps")} for r in records]


def cli(capsys, *argv: str) -> tuple[int, str]:
    code = thrust_main(list(argv))
    return code, capsys.readouterr().err


# -- one writer per run folder -------------------------------------------------------------------------
def test_a_second_writer_is_refused_naming_the_holder(tmp_path, capsys):
    run = tmp_path / "dup"
    with RunLock(run):
        code, err = cli(capsys, "train", "ppo", "cartpole", "--timesteps", "256", "--run-dir", str(run), "--quiet")
        assert code == 2 and f"is being written by process {os.getpid()}" in err and err.count("\n") == 1
    assert not (run / "config.json").exists()


def test_two_trainings_started_together_leave_one_consistent_run(tmp_path):
    run = tmp_path / "dup"
    first, second = start_training(run), start_training(run)
    codes = [first.wait(120), second.wait(120)]
    errors = first.stderr.read().decode() + second.stderr.read().decode()
    assert codes.count(0) == 1, errors
    assert "is being written by process" in errors or "already holds a run" in errors
    summary = json.loads((run / "summary.json").read_text())
    assert summary["status"] == "finished" and summary["seed"] == json.loads((run / "config.json").read_text())["seed"]
    steps = [r["step"] for r in read_jsonl(run / "metrics.jsonl") if r["kind"] == "train"]
    assert steps == sorted(steps) and len(steps) == len(set(steps))


def test_the_lock_dies_with_its_process(tmp_path):
    run = tmp_path / "run"
    child = start_training(run, timesteps=200_000)
    wait_for(lambda: is_locked(run), 60)
    child.kill()
    child.wait(30)
    assert not is_locked(run)


# -- signals and kills ---------------------------------------------------------------------------------
@pytest.mark.parametrize("kill", [signal.SIGTERM, signal.SIGKILL] * 2, ids=["term", "kill", "term2", "kill2"])
def test_a_killed_run_resumes_to_exactly_the_uninterrupted_run(kill, tmp_path):
    """Killed at a random point (after its first checkpoint); resumed, it writes the same records as a run
    that never stopped, and leaves no other file behind."""
    whole = tmp_path / "whole"
    subprocess.run([sys.executable, "-c", TRAIN_SCRIPT, str(whole), "12288"], check=True, capture_output=True)
    run = tmp_path / "run"
    child = start_training(run)
    wait_for(lambda: (run / LAST_CHECKPOINT).exists(), 60)
    time.sleep(random.Random(kill + len(str(tmp_path))).uniform(0.0, 1.0))
    child.send_signal(kill)
    child.wait(60)
    if kill == signal.SIGTERM:  # the trainer stops at the end of the iteration and checkpoints there
        status = json.loads((run / "summary.json").read_text())["status"]
        if status == "finished":
            pytest.skip("the run finished before the signal arrived")
        assert status == "terminated"
    assert not is_locked(run)
    at_checkpoint = load_checkpoint(run / LAST_CHECKPOINT)["algo"]["num_timesteps"]
    summary = resume(run, **QUIET)
    assert summary["status"] == "finished" and summary["timesteps"] == 12_288 and at_checkpoint <= 12_288
    assert comparable(read_jsonl(run / "metrics.jsonl")) == comparable(read_jsonl(whole / "metrics.jsonl"))
    assert summary["eval_mean"] == json.loads((whole / "summary.json").read_text())["eval_mean"]
    assert {p.name for p in run.iterdir()} <= {"config.json", "metrics.jsonl", LAST_CHECKPOINT, "summary.json", ".lock"}


def test_a_killed_runs_summary_agrees_with_its_last_checkpoint(tmp_path):
    """summary.json is rewritten with each checkpoint: after a kill -9 it says where the run stands (status
    "incomplete", the checkpoint's step), not what an earlier process left there."""
    run = tmp_path / "run"
    child = start_training(run, timesteps=200_000)
    # killed once a checkpoint and its summary are both written: a kill between the two writes (a window of
    # milliseconds at each checkpoint) would leave the summary one checkpoint behind
    summary = run / "summary.json"
    wait_for(lambda: summary.exists() and json.loads(summary.read_text())["timesteps"] >= 4096, 120)
    child.kill()
    child.wait(30)
    written = json.loads(summary.read_text())
    at_checkpoint = load_checkpoint(run / LAST_CHECKPOINT)["algo"]["num_timesteps"]
    assert written["status"] == "incomplete" and written["timesteps"] == at_checkpoint >= 4096, written


def test_resume_removes_the_temporary_file_a_kill_mid_write_left(tmp_path):
    """A SIGKILL between writing a checkpoint's temporary file and renaming it leaves `.last.pt.XXXX.tmp`;
    the next writer of the folder removes it (the kill tests above hit that moment only by chance)."""
    run = tmp_path / "run"
    train("ppo", "cartpole", timesteps=512, run_dir=run, checkpoint_every=256, **QUIET)
    leftover = run / ".last.pt.k1ll3d.tmp"
    leftover.write_bytes(b"half a checkpoint")
    resume(run, timesteps=768, **QUIET)
    assert not leftover.exists() and (run / LAST_CHECKPOINT).exists()


def test_sigterm_checkpoints_and_names_the_run_in_the_hint(tmp_path):
    run = tmp_path / "term"
    child = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "thrust_app",
            "train",
            "ppo",
            "cartpole",
            "--timesteps",
            "500000",
            "--run-dir",
            str(run),
            "--quiet",
        ],
        stderr=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
    )
    wait_for(lambda: (run / "metrics.jsonl").exists() and (run / "metrics.jsonl").stat().st_size > 0, 60)
    child.terminate()
    assert child.wait(60) == 143
    err = child.stderr.read().decode()
    assert f"thrust train --resume {run}" in err and "RUN_DIR" not in err
    state = load_checkpoint(run / LAST_CHECKPOINT)
    assert state["algo"]["num_timesteps"] == json.loads((run / "summary.json").read_text())["timesteps"] > 0


# -- diverging runs --------------------------------------------------------------------------------------
def test_a_diverging_run_stops_as_diverged_and_keeps_the_last_finite_checkpoint(tmp_path, capsys):
    run = tmp_path / "nan"
    code, err = cli(
        capsys,
        "train",
        "ppo",
        "cartpole",
        "--timesteps",
        "4096",
        "--run-dir",
        str(run),
        "--quiet",
        "--set",
        "learning_rate=1e30",
        "--set",
        "max_grad_norm=1e30",
        "--set",
        "lr_schedule=constant",
    )
    summary = json.loads((run / "summary.json").read_text())
    assert code == 3 and summary["status"] == "diverged" and summary["diverged_at_step"] is not None
    assert f"training diverged at step {summary['diverged_at_step']:,}" in err
    if (run / LAST_CHECKPOINT).exists():  # written before the divergence: finite
        state = load_checkpoint(run / LAST_CHECKPOINT)["algo"]["net"]
        assert all(torch.isfinite(t).all() for t in state.values())


def test_export_refuses_a_policy_that_outputs_nan(tmp_path):
    run = tmp_path / "run"
    train("ppo", "cartpole", timesteps=256, run_dir=run, device="cpu", eval_episodes=1, **QUIET)
    state = load_checkpoint(run / LAST_CHECKPOINT)
    state["algo"]["net"]["pi_head.bias"] = torch.full_like(state["algo"]["net"]["pi_head.bias"], float("nan"))
    save_checkpoint(run / LAST_CHECKPOINT, {k: v for k, v in state.items() if k not in ("format", "version")})
    with pytest.raises(ParityError, match="NaN or infinite"):
        export_run(run, tmp_path / "bundle")
    assert not (tmp_path / "bundle").exists()


# -- bad settings ----------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "setting, message",
    [
        ("n_steps=1e9", "one rollout is n_steps x n_envs"),
        ("n_envs=1e8", "one rollout is n_steps x n_envs"),
        ("learning_rate=inf", "learning_rate must be a finite number"),
        ("tau=5", "unknown ppo config key 'tau'"),
    ],
)
def test_impossible_settings_are_one_line_before_any_folder(setting, message, tmp_path, capsys):
    code, err = cli(
        capsys, "train", "ppo", "cartpole", "--timesteps", "2048", "--run-dir", str(tmp_path / "r"), "--set", setting
    )
    assert code == 2 and message in err and err.count("\n") == 1 and not (tmp_path / "r").exists()


def test_a_replay_buffer_larger_than_memory_is_refused(tmp_path, capsys):
    code, err = cli(capsys, "train", "dqn", "cartpole", "--run-dir", str(tmp_path / "r"), "--set", "buffer_size=1e11")
    assert code == 2 and "GiB" in err and "lower buffer_size" in err


def test_a_failed_resume_changes_nothing(tmp_path, capsys):
    run = tmp_path / "run"
    train("ppo", "bandit", timesteps=256, run_dir=run, device="cpu", eval_episodes=1, **QUIET)
    (run / LAST_CHECKPOINT).unlink()
    before = (run / "config.json").read_text()
    code, err = cli(capsys, "train", "--resume", str(run), "--timesteps", "9999", "--quiet")
    assert code == 2 and "no checkpoint" in err and (run / "config.json").read_text() == before


def test_a_full_disk_is_one_line_and_keeps_the_last_checkpoint(tmp_path, capsys, monkeypatch):
    from thrust_app.training import checkpointer

    run = tmp_path / "run"
    train("ppo", "bandit", timesteps=256, run_dir=run, device="cpu", eval_episodes=1, **QUIET)
    kept = (run / LAST_CHECKPOINT).read_bytes()

    def disk_full(path, state):
        raise OSError(errno.ENOSPC, "No space left on device", str(path))

    monkeypatch.setattr(checkpointer, "save_checkpoint", disk_full)
    code, err = cli(capsys, "train", "--resume", str(run), "--timesteps", "512", "--quiet")
    assert code == 1 and "No space left on device" in err and str(run) in err and "Traceback" not in err
    assert (run / LAST_CHECKPOINT).read_bytes() == kept


@pytest.mark.filterwarnings("ignore:Detected pickle protocol")
def test_garbage_checkpoints_never_suggest_unpickling(tmp_path, capsys):
    run = tmp_path / "run"
    train("ppo", "bandit", timesteps=256, run_dir=run, device="cpu", eval_episodes=1, **QUIET)
    (run / LAST_CHECKPOINT).write_bytes(b"\x80\x04garbage" * 100)
    code, err = cli(capsys, "train", "--resume", str(run), "--timesteps", "512", "--quiet")
    assert code == 2 and "weights_only" not in err and "not a readable Thrust checkpoint" in err


def test_run_files_are_readable_like_the_metrics(tmp_path):
    run = tmp_path / "run"
    train("ppo", "bandit", timesteps=256, run_dir=run, device="cpu", eval_episodes=1, **QUIET)
    for name in ("config.json", "summary.json", LAST_CHECKPOINT):
        assert (run / name).stat().st_mode & 0o777 == 0o644, name


# -- bundles ---------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def bundle(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("bundles")
    train("ppo", "cartpole", timesteps=256, run_dir=root / "run", device="cpu", eval_episodes=1, **QUIET)
    export_run(root / "run", root / "export" / "good")
    return root / "export" / "good"


@pytest.mark.parametrize("field", ["algo", "env_id", "observation", "action_space", "action_output"])
def test_a_manifest_missing_a_field_is_named_and_the_rest_still_list(field, bundle, tmp_path, capsys):
    export = tmp_path / "export"
    for name in ("good", "bad"):
        (export / name).mkdir(parents=True)
        for part in ("policy.onnx", "manifest.json"):
            (export / name / part).write_bytes((bundle / part).read_bytes())
    manifest = json.loads((export / "bad" / "manifest.json").read_text())
    del manifest[field]
    (export / "bad" / "manifest.json").write_text(json.dumps(manifest))
    index = {entry["name"]: entry for entry in bundle_index(export)}
    assert index["good"]["ok"] and not index["bad"]["ok"] and f"'{field}" in index["bad"]["error"]
    code, err = cli(capsys, "eval", str(export / "bad"), "--episodes", "1")
    assert code == 2 and f"'{field}" in err and err.count("\n") == 1


def test_a_fixed_batch_of_one_runs_step_by_step(bundle, tmp_path):
    import onnx

    from thrust_app.interop.bundle import sha256_file

    fixed = tmp_path / "fixed"
    fixed.mkdir()
    model = onnx.load(str(bundle / "policy.onnx"))
    for value in [*model.graph.input, *model.graph.output]:
        value.type.tensor_type.shape.dim[0].dim_value = 1  # what SB3's export recipe makes
    onnx.save(model, str(fixed / "policy.onnx"))
    manifest = json.loads((bundle / "manifest.json").read_text()) | {"sha256": sha256_file(fixed / "policy.onnx")}
    (fixed / "manifest.json").write_text(json.dumps(manifest))
    obs = np.random.default_rng(0).normal(size=(5, 4)).astype(np.float32)
    np.testing.assert_array_equal(OnnxPolicy(load_bundle(fixed)).act(obs), OnnxPolicy(load_bundle(bundle)).act(obs))


def test_an_onnx_file_without_a_manifest_is_called_that(tmp_path, capsys, bundle):
    (tmp_path / "policy.onnx").write_bytes((bundle / "policy.onnx").read_bytes())
    code, err = cli(capsys, "eval", str(tmp_path))
    assert code == 2 and "an ONNX file without a Thrust manifest" in err


# -- the dashboard's jobs ------------------------------------------------------------------------------
def test_a_crashed_job_shows_as_failed_with_its_exit_code_and_log(tmp_path):
    path = tmp_path / "runs" / "broken"
    jobs._launch(["ppo", "cartpole", "--set", "no_such_key=1", "--run-dir", str(path)], path, {"algo": "ppo"})
    wait_for(lambda: jobs.run_status(path) == "failed", 60)
    info = next(info for info in jobs.list_runs(tmp_path / "runs") if info.path == path)
    assert info.failure.startswith("exit code 2") and "unknown ppo config key 'no_such_key'" in info.failure


def test_sigterm_to_the_dashboard_stops_its_streamlit_too(tmp_path):
    import socket

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    app = subprocess.Popen(
        [sys.executable, "-m", "thrust_app", "app", "--port", str(port)],
        cwd=tmp_path,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )

    def serving() -> bool:
        with socket.socket() as client:
            return client.connect_ex(("127.0.0.1", port)) == 0

    try:
        wait_for(serving, 90)
        app.terminate()
        app.wait(60)
        wait_for(lambda: not serving(), 30)
    finally:
        os.killpg(app.pid, signal.SIGKILL) if app.poll() is None else None


def test_buffers_and_activations_larger_than_memory_are_refused_up_front(tmp_path, capsys):
    code, err = cli(
        capsys,
        "train",
        "ppo",
        "cartpole",
        "--set",
        "n_envs=1e8",
        "--set",
        "n_steps=1",
        "--timesteps",
        "1e9",
        "--run-dir",
        str(tmp_path / "r"),
    )
    assert code == 2 and "GiB" in err and "lower n_steps or n_envs" in err and not (tmp_path / "r").exists()


def test_debug_anywhere_on_the_line_adds_the_traceback(capsys):
    code, err = cli(capsys, "train", "ppo", "cartpole", "--set", "no_such_key=1", "--debug")
    assert code == 2 and "Traceback" in err
    assert "thrust: error: unknown ppo config key 'no_such_key'" in err
