"""The Ray Tune engine of `thrust sweep`, run for real: ASHA on a local Ray that reaches nothing outside
127.0.0.0/8 (traced), PBT changing a trial's learning rate in its run folder, a two-node cluster on this
machine, a trial's worker killed (retried from its checkpoint) and then the driver (Tuner.restore), and a
stopped trial's worker that lets its run end before it exits."""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch

from thrust_app.sweeps.trials import trial_states

# One local Ray at a time: with `pytest -n 2` every Ray test runs in the same worker.
pytestmark = pytest.mark.xdist_group("ray")

BANDIT = """
name: {name}
algo: ppo
env: bandit
timesteps: {timesteps}
base: {{n_steps: 16, lr_schedule: constant}}
search:
  learning_rate: {{type: loguniform, low: 1.0e-6, high: 1.0e-2}}
trials: 4
engine: ray
pruner: {pruner}
sampler: random
eval_every: {eval_every}
eval_episodes: 20
"""

#: connect() to an IPv4 / IPv6 address in strace's output
CONNECT = re.compile(r'connect\(\d+, \{sa_family=AF_INET6?, .*?(?:inet_addr|inet_pton\(AF_INET6), "([^"]+)"')


def sweep_command(*args: str) -> list[str]:
    return [sys.executable, "-m", "thrust_app", "sweep", *args]


def write_sweep(tmp_path: Path, name: str, pruner: str, timesteps: int = 2048, eval_every: int = 256, **extra: object) -> Path:
    path = tmp_path / f"{name}.yaml"
    text = BANDIT.format(name=name, timesteps=timesteps, pruner=pruner, eval_every=eval_every)
    path.write_text(text + "".join(f"{key}: {value}\n" for key, value in extra.items()))
    return path


def ledger(folder: Path) -> dict[str, dict]:
    return json.loads((folder / "trials.json").read_text())


def alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().split(") ")[-1][0] != "Z"
    except FileNotFoundError:
        return False


def is_loopback(address: str) -> bool:
    address = address.removeprefix("::ffff:")
    return address == "::1" or address.startswith("127.")


def test_an_asha_sweep_on_a_local_ray_prunes_and_reaches_only_loopback(tmp_path):
    strace = shutil.which("strace")
    assert strace, "this test traces Ray's sockets with strace: `apt-get install strace` (make test installs it)"
    trace = tmp_path / "connect.trace"
    path = write_sweep(tmp_path, "asha", "asha", timesteps=8192, eval_every=2048)
    path.write_text(path.read_text().replace("env: bandit", "env: cartpole").replace("eval_episodes: 20", "eval_episodes: 5"))
    # --seccomp-bpf: only connect() stops a traced process (every syscall would, slowing torch's imports in
    # Ray's workers many times over on a busy machine)
    result = subprocess.run(
        [
            strace,
            *"-f --seccomp-bpf -qq -e trace=connect -o".split(),
            str(trace),
            *sweep_command(str(path), "--runs-root", "runs"),
        ],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=400,
        # a RAY_ADDRESS left in the environment (here: nothing listens there) is not joined without --address
        env={**os.environ, "RAY_ADDRESS": "127.0.0.1:1"},
    )
    assert result.returncode == 0, result.stderr[-2000:]
    assert "RAY_ADDRESS=127.0.0.1:1 is ignored" in result.stdout
    folder = tmp_path / "runs" / "asha"
    states = trial_states(folder)
    assert states.get("complete", 0) + states.get("pruned", 0) == 4 and states.get("pruned", 0) >= 1, states
    for entry in ledger(folder).values():  # the ledger agrees with each trial's run folder
        summary = json.loads((folder / f"trial-{entry['number']:04d}-s0" / "summary.json").read_text())
        assert summary["status"] == ("finished" if entry["state"] == "complete" else "stopped")
        assert (summary["timesteps"] < 8192) == (entry["state"] == "pruned")
    assert "best trial" in result.stdout
    assert not (folder / "scratch").exists()  # the trials' temporary checkpoint folders end with the sweep
    lines = trace.read_text().splitlines()
    destinations = {match.group(1) for line in lines if (match := CONNECT.search(line))}
    assert destinations and all(is_loopback(address) for address in destinations), destinations
    pids = {int(line.split()[0]) for line in lines if line.split() and line.split()[0].isdigit()}
    time.sleep(2)
    assert not [pid for pid in pids if alive(pid)], "processes of the local Ray outlived the sweep"


def test_pbt_exploits_change_a_trials_learning_rate_in_its_run_folder(tmp_path):
    path = write_sweep(tmp_path, "pbt", "pbt", timesteps=4096, pbt_interval=1024)
    result = subprocess.run(
        sweep_command(str(path), "--runs-root", "runs"), cwd=tmp_path, capture_output=True, text=True, timeout=400
    )
    assert result.returncode == 0, result.stderr[-2000:]
    folder = tmp_path / "runs" / "pbt"
    trials = [(run, json.loads((run / "trial.json").read_text())) for run in sorted(folder.glob("trial-*-s0"))]
    # exploits before the budget's end (one at the end changes a setting nothing trains with)
    exploited = [(run, trial) for run, trial in trials if any(e["step"] < 4096 for e in trial.get("exploits", []))]
    assert exploited, "no PBT exploit happened"
    run, trial = exploited[0]
    config = json.loads((run / "config.json").read_text())
    assert config["config"]["learning_rate"] == pytest.approx(trial["params"]["learning_rate"])
    assert all(e["params"]["learning_rate"] != pytest.approx(e["from_params"]["learning_rate"]) for e in trial["exploits"])
    # The schedule is constant, so only an exploit changes the learning rate the train records show.
    records = [json.loads(line) for line in (run / "metrics.jsonl").read_text().splitlines()]
    rates = [record["losses"]["learning_rate"] for record in records if record["kind"] == "train"]
    chosen = [exploit["params"]["learning_rate"] for exploit in trial["exploits"]]
    assert len(set(rates)) > 1 and any(rate == pytest.approx(value) for rate in rates for value in chosen), (rates, chosen)
    summary = json.loads((run / "summary.json").read_text())
    assert summary["status"] == "finished" and summary["timesteps"] >= 4096


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def ray_node(args: list[str], log: Path) -> subprocess.Popen:
    """`ray start --block` on loopback only (thrust_app.sweeps.ray_loopback); the node's processes end with it."""
    with open(log, "wb") as out:
        return subprocess.Popen(
            [sys.executable, "-m", "thrust_app.sweeps.ray_loopback", "start", "--block", *args],
            stdout=out,
            stderr=subprocess.STDOUT,
        )


def stop_nodes(nodes: list[subprocess.Popen]) -> None:
    for node in reversed(nodes):  # the worker first, then the head
        if node.poll() is None:
            node.send_signal(signal.SIGTERM)
            try:
                node.wait(60)
            except subprocess.TimeoutExpired:
                node.kill()
                node.wait(10)


def test_a_sweep_joins_a_two_node_cluster_and_places_trials_on_both_nodes(tmp_path):
    port = free_port()
    temp = Path(f"/tmp/thrust-ray-{os.getpid()}")  # short: Ray's socket paths live under it
    nodes: list[subprocess.Popen] = []
    try:
        nodes.append(
            ray_node(
                [
                    "--head",
                    f"--port={port}",
                    "--node-ip-address=127.0.0.1",
                    "--num-cpus=1",
                    "--include-dashboard=false",
                    "--disable-usage-stats",
                    f"--temp-dir={temp}",
                ],
                log=tmp_path / "head.log",
            )
        )
        address = f"127.0.0.1:{port}"
        deadline = time.time() + 90
        while time.time() < deadline and "Ray runtime started" not in (tmp_path / "head.log").read_text():
            time.sleep(0.5)
        nodes.append(ray_node([f"--address={address}", "--num-cpus=1"], log=tmp_path / "worker.log"))
        while time.time() < deadline and "Ray runtime started" not in (tmp_path / "worker.log").read_text():
            time.sleep(0.5)
        assert all(node.poll() is None for node in nodes), (tmp_path / "head.log").read_text()[-2000:]
        path = write_sweep(tmp_path, "cluster", "none", timesteps=4096)
        result = subprocess.run(
            sweep_command(str(path), "--runs-root", "runs", "--address", address),
            cwd=tmp_path,
            capture_output=True,
            text=True,
            timeout=400,
        )
        assert result.returncode == 0, result.stderr[-2000:]
        entries = ledger(tmp_path / "runs" / "cluster").values()
        assert [entry["state"] for entry in entries] == ["complete"] * 4
        assert len({node for entry in entries for node in entry["nodes"]}) == 2, entries
    finally:
        stop_nodes(nodes)
        shutil.rmtree(temp, ignore_errors=True)
    assert all(node.poll() is not None for node in nodes)


def descendants(pid: int) -> set[int]:
    """Every process under `pid` (from /proc)."""
    children: dict[int, list[int]] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().split(") ")[-1].split()
        except OSError:
            continue
        children.setdefault(int(fields[1]), []).append(int(stat.parent.name))
    found, todo = set(), [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            found.add(child)
            todo.append(child)
    return found


def test_a_killed_trial_retries_from_its_checkpoint_and_a_killed_driver_resumes(tmp_path):
    path = write_sweep(tmp_path, "restore", "none", timesteps=40_000, eval_every=2048, workers=1)
    folder = tmp_path / "runs" / "restore"
    driver = subprocess.Popen(
        sweep_command(str(path), "--runs-root", "runs"),
        cwd=tmp_path,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    ray_processes: set[int] = set()
    try:
        deadline = time.time() + 240

        def wait_for(condition) -> None:
            while time.time() < deadline and not condition():
                ray_processes.update(descendants(driver.pid))
                time.sleep(0.2)
            assert condition(), "timed out"

        def reported(number: int, steps: int) -> bool:
            entry = ledger(folder).get(str(number), {}) if (folder / "trials.json").exists() else {}
            return (entry.get("step") or 0) >= steps

        # A trial's worker process dies (as if OOM-killed): Tune restarts the trial from its checkpoint.
        wait_for(lambda: reported(0, 2048))
        os.kill(int((folder / "trial-0000-s0" / ".lock").read_text()), signal.SIGKILL)
        wait_for(lambda: ledger(folder)["0"]["failures"] >= 1 and reported(0, 4096))
        # Then the driver dies: `thrust sweep --resume` continues with Tuner.restore.
        wait_for(lambda: reported(1, 2048))
        os.killpg(driver.pid, signal.SIGKILL)
        driver.wait(30)
    finally:
        if driver.poll() is None:
            os.killpg(driver.pid, signal.SIGKILL)
            driver.wait(30)
        for pid in ray_processes:  # what the killed driver's Ray left, stopped by PID
            if alive(pid):
                os.kill(pid, signal.SIGKILL)
    result = subprocess.run(sweep_command("--resume", str(folder)), cwd=tmp_path, capture_output=True, text=True, timeout=400)
    assert result.returncode == 0, result.stderr[-2000:]
    assert "Tuner.restore" in result.stdout
    assert trial_states(folder) == {"complete": 4}
    for number in range(4):
        run = folder / f"trial-{number:04d}-s0"
        summary = json.loads((run / "summary.json").read_text())
        assert summary["status"] == "finished" and summary["timesteps"] >= 40_000
        steps = [json.loads(line)["step"] for line in (run / "metrics.jsonl").read_text().splitlines()]
        assert steps == sorted(steps)  # a restart continued the records where its checkpoint was
    assert ledger(folder)["0"]["failures"] >= 1
    # the killed worker's temporary checkpoint folders (inside the sweep folder) are gone with the sweep
    assert not (folder / "scratch").exists()
    # Tune kept every report's checkpoint, each a marker of the trial and step (the state is the run folder's
    # last.pt), so none that Tune's experiment state names was deleted before the restore
    for number in range(4):
        kept = list((folder / "ray" / "restore" / f"trial-{number:04d}").glob("checkpoint_*"))
        assert len(kept) > 2 and all(sorted(p.name for p in marker.iterdir()) == ["trial.json"] for marker in kept)


def test_a_trial_restarts_from_its_run_folder_or_from_the_state_a_pbt_checkpoint_carries(tmp_path):
    from ray import tune

    from thrust_app.sweeps.ray_engine import restart_point
    from thrust_app.sweeps.spec import TRIAL_FILE, SweepSpec

    spec = SweepSpec(name="s", algo="ppo", env="bandit", timesteps=1024, search={})
    params = {"learning_rate": 1e-3}
    checkpoint = tmp_path / "checkpoint"
    checkpoint.mkdir()
    (checkpoint / TRIAL_FILE).write_text(json.dumps({"trial": 3, "params": params, "step": 512}))
    restart = lambda scratch: restart_point(tune.Checkpoint.from_directory(checkpoint), scratch, tmp_path, spec, 3, params)  # noqa: E731
    (tmp_path / "a").mkdir()
    assert restart(tmp_path / "a") is None  # a marker: run_seed goes on from the run folder's last.pt
    (checkpoint / "last.pt").write_bytes(b"state")  # under PBT the checkpoint carries the trainer's state
    (tmp_path / "b").mkdir()
    start = restart(tmp_path / "b")
    assert start.checkpoint.read_bytes() == b"state" and not start.overrides  # its own settings


def slow_to_stop(config: dict, marker: str) -> None:
    """A trial whose run takes a second to end once stopped (a run's last iteration, checkpoint, summary)."""
    from ray import tune

    try:
        for step in range(100):
            tune.report({"score": step})
    finally:
        time.sleep(1.0)
        Path(marker).write_text("ended")


def test_a_stopped_trials_worker_lets_its_run_end_before_it_exits(tmp_path):
    """The last trials of a sweep are stopped without their worker being kept: the worker exits after
    `stop()`, so a run still ending then would be cut off with its "incomplete" summary."""
    from ray import tune
    from ray.train._internal.storage import StorageContext

    from thrust_app.sweeps.ray_engine import ray_session, run_ending

    marker = tmp_path / "ended"
    trainable = run_ending(tune.with_parameters(slow_to_stop, marker=str(marker)))
    with ray_session(None, 1):
        storage = StorageContext(storage_path=str(tmp_path / "ray"), experiment_dir_name="e", trial_dir_name="t")
        trial = trainable(config={}, storage=storage)
        assert trial.train()["score"] == 0
        trial.stop()  # what Tune calls before a worker it does not keep exits
        assert marker.read_text() == "ended"


@pytest.mark.skipif(torch.cuda.is_available(), reason="this machine has a GPU: the refusal is for machines without one")
def test_a_gpu_share_on_a_machine_without_gpus_is_one_line(tmp_path):
    path = write_sweep(tmp_path, "gpu", "none", gpus_per_trial=0.5)
    result = subprocess.run(
        sweep_command(str(path), "--runs-root", "runs"), cwd=tmp_path, capture_output=True, text=True, timeout=300
    )
    assert result.returncode != 0 and "has no GPU; set gpus_per_trial: 0" in result.stderr, result.stderr[-2000:]
