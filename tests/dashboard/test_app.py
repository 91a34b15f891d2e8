"""The Streamlit dashboard: start a run, watch its metrics arrive, stop it, resume it, export it;
bad field values show their message; and a real browser sees the page and a live chart."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from thrust_app.dashboard import jobs
from thrust_app.runs.lock import is_locked
from thrust_app.web.browser import CHROMIUM, dashboard_page

APP = str(Path(__file__).resolve().parents[2] / "thrust_app" / "dashboard" / "app.py")
SUBMIT = "FormSubmitter:new-run-Start training"


@pytest.fixture
def dirs(tmp_path, monkeypatch):
    monkeypatch.setenv("THRUST_RUNS_DIR", str(tmp_path / "runs"))
    monkeypatch.setenv("THRUST_EXPORT_DIR", str(tmp_path / "export"))
    monkeypatch.setenv("THRUST_PLAYER_PORT", "0")
    yield tmp_path
    for info in jobs.list_runs(tmp_path / "runs"):  # leave no training process behind
        if info.active:
            jobs.stop_run(info.path)
            wait_until(lambda path=info.path: not is_locked(path), 60)


def wait_until(condition, timeout: float, at: AppTest | None = None):
    deadline = time.time() + timeout
    while time.time() < deadline:
        if at is not None:
            at.run()
        if condition():
            return
        time.sleep(0.5)
    raise AssertionError("timed out waiting")


def progress_text(at: AppTest) -> str:
    bars = at.get("progress")
    return bars[0].proto.text if bars else ""


def new_app() -> AppTest:
    at = AppTest.from_file(APP, default_timeout=120)
    at.run()
    assert not at.exception
    return at


def test_invalid_fields_show_their_message_and_start_nothing(dirs):
    at = new_app()
    at.selectbox(key="new-algo").set_value("ppo").run()
    at.text_input(key="hp-ppo-n_steps").set_value("abc")
    at.text_input(key="hp-ppo-gamma").set_value("1.7")
    at.text_input(key="new-timesteps").set_value("-5")
    at.button(key=SUBMIT).click().run()
    errors = [e.value for e in at.error]
    assert "n_steps: cannot read 'abc'; expected an integer" in errors
    assert "gamma must be in [0, 1], got 1.7" in errors
    assert any("timesteps must be a whole number" in e for e in errors)
    assert jobs.list_runs() == []


def test_algorithms_offered_fit_the_env(dirs):
    at = new_app()
    assert at.selectbox(key="new-algo").options == ["a2c", "ppo", "recurrent_ppo", "dqn"]  # bandit: discrete
    at.selectbox(key="new-env").set_value("pendulum").run()
    assert at.selectbox(key="new-algo").options == ["a2c", "ppo", "recurrent_ppo", "sac", "td3", "ddpg"]


def test_start_watch_stop_resume_export(dirs):
    at = new_app()
    at.selectbox(key="new-algo").set_value("ppo").run()
    at.text_input(key="new-timesteps").set_value("300000")
    at.button(key=SUBMIT).click().run()
    assert at.success and "Started ppo on bandit" in at.success[0].value
    (run,) = jobs.list_runs()
    last_eval = lambda: next((m.value for m in at.metric if m.label == "Last eval"), "—")  # noqa: E731
    wait_until(lambda: "running: step" in progress_text(at) and at.get("vega_lite_chart") and last_eval() != "—", 90, at)

    at.button(key="stop").click().run()
    # a user clicks Resume once it is enabled
    wait_until(lambda: progress_text(at).startswith("stopped") and not at.button(key="resume").disabled, 60, at)
    stopped_at = jobs.progress(jobs.list_runs()[0])["step"]
    assert (run.path / "last.pt").exists() and 0 < stopped_at < 300_000

    at.button(key="resume").click().run()
    wait_until(
        lambda: progress_text(at).startswith("running") and jobs.progress(jobs.list_runs()[0])["step"] > stopped_at, 90, at
    )
    at.button(key="stop").click().run()
    wait_until(lambda: progress_text(at).startswith("stopped"), 60, at)

    at.button(key="export").click().run()
    assert not at.error, [e.value for e in at.error]
    labels = {m.label: m.value for m in at.metric}
    assert labels["action agreement"] == "100.0%"
    assert (dirs / "export" / run.name / "policy.onnx").exists()
    link = at.get("link_button")[0].proto
    assert link.url.startswith("http://127.0.0.1:") and f"?bundle={run.name}" in link.url


def test_a_run_launched_before_it_writes_its_config_leaves_the_runs_tab_whole(dirs):
    # the moment after Start: the dashboard wrote launched.json, the training process has not yet written config.json
    from thrust_app.training.trainer import train

    train("ppo", "bandit", timesteps=256, run_dir=dirs / "runs" / "old", eval_episodes=1, progress=False, log=lambda _: None)
    launched = dirs / "runs" / "new"
    launched.mkdir()
    request = {"algo": "ppo", "env": "bandit", "timesteps": 300_000, "seed": 0, "device": "cpu"}
    (launched / jobs.LAUNCH_FILE).write_text(json.dumps(request | {"launched_at": time.time()}))
    at = new_app()  # no exception in any tab
    assert at.selectbox(key="yaml-run").options == ["old"]  # the YAML of a run whose settings are written


def test_the_live_panel_shows_the_status_its_stop_and_resume_buttons_saw(dirs, monkeypatch):
    # a run whose process ends between two reads of the runs folder: each read here alternates between "running"
    # and "stopped", so a panel that read the folder again below the buttons would show the other one
    import dataclasses

    from thrust_app.training.trainer import train

    train("ppo", "bandit", timesteps=256, run_dir=dirs / "runs" / "old", eval_episodes=1, progress=False, log=lambda _: None)
    (dirs / "runs" / "old" / "last.pt").touch()  # a checkpoint to resume from
    list_runs, reads = jobs.list_runs, iter(["running", "stopped"] * 100)
    monkeypatch.setattr(jobs, "list_runs", lambda *a: [dataclasses.replace(r, status=next(reads)) for r in list_runs(*a)])
    at, seen = new_app(), set()
    for _ in range(4):
        at.run()
        shown, resume = progress_text(at).split(":")[0], at.button(key="resume")
        assert (shown, resume.disabled) in (("running", True), ("stopped", False)), (shown, resume.disabled)
        seen.add(shown)
    assert seen == {"running", "stopped"}


def test_delete_needs_confirmation(dirs):
    from thrust_app.training.trainer import train

    train("ppo", "bandit", timesteps=256, run_dir=dirs / "runs" / "old", eval_episodes=1, progress=False, log=lambda _: None)
    at = new_app()
    assert at.button(key="delete").disabled
    at.checkbox(key="delete-confirm").check().run()
    at.button(key="delete").click().run()
    assert jobs.list_runs() == []


@pytest.mark.skipif(
    not os.environ.get("THRUST_REQUIRE_BROWSER") and not CHROMIUM.exists(),
    reason="needs Debian chromium at /usr/bin/chromium (.ci/run installs it)",
)
def test_real_browser_starts_a_run_and_sees_a_chart(dirs):
    with dashboard_page() as page:  # THRUST_RUNS_DIR etc. come from the `dirs` fixture
        page.get_by_label("Timesteps").fill("20000")
        page.get_by_text("Start training").click()
        page.get_by_text("Started a2c on bandit").wait_for(timeout=60_000)
        page.get_by_role("tab", name="Training").click()
        page.locator("[data-testid='stVegaLiteChart']:visible").first.wait_for(timeout=150_000)
        shot = Path(os.environ.get("THRUST_SCREENSHOT_DIR", dirs)) / "dashboard.png"
        page.screenshot(path=str(shot), full_page=True)
        assert shot.stat().st_size > 20_000


def test_the_form_shows_the_preset_the_run_will_use(dirs):
    """PPO on `cartpole` (the short name) starts from the zoo preset: its values, its budget, its source."""
    at = new_app()
    at.selectbox(key="new-env").set_value("cartpole").run()
    at.selectbox(key="new-algo").set_value("ppo").run()
    assert at.text_input(key="hp-ppo-learning_rate").value == "0.001"
    assert at.text_input(key="hp-ppo-n_steps").value == "32"
    assert at.text_input(key="new-timesteps").value == "100000"
    assert any("rl-baselines3-zoo" in m.value for m in at.markdown)
    at.selectbox(key="new-env").set_value("pendulum").run()  # another env: its own preset, not the old values
    assert at.text_input(key="hp-ppo-n_steps").value == "1024"
    assert at.text_input(key="hp-ppo-gae_lambda").value == "0.95"  # CartPole's is 0.8
    assert at.text_input(key="new-timesteps").value == "100000"


def test_a_named_preset_fills_the_form_and_another_pair_goes_back_to_its_default(dirs):
    at = new_app()
    at.selectbox(key="new-env").set_value("cartpole").run()
    at.selectbox(key="new-algo").set_value("ppo").run()
    assert at.selectbox(key="new-preset").options == ["default", "fast", "gpu"]
    at.text_input(key="hp-ppo-n_envs").set_value("16").run()
    at.selectbox(key="new-preset").set_value("gpu").run()
    assert at.text_input(key="hp-ppo-n_envs").value == "4096"  # the preset's, not the value typed before
    assert at.text_input(key="hp-ppo-cuda_graphs").value == "True"
    assert at.text_input(key="new-timesteps").value == "10000000"
    at.selectbox(key="new-env").set_value("pendulum").run()
    assert at.selectbox(key="new-preset").options == ["default", "no-sde"]
    assert at.selectbox(key="new-preset").value == "default"


def test_the_run_started_from_a_named_preset_records_it(dirs):
    path = jobs.start_run("ppo", "cartpole", timesteps=2048, seed=0, device="cpu", overrides={"n_envs": 16}, preset="fast")
    wait_until(lambda: (path / "config.json").exists(), 60)
    config = json.loads((path / "config.json").read_text())
    assert config["preset"] == "fast" and config["eval_every"] == 1024 and "--preset fast" in config["command"]


def test_start_sends_every_field_and_selects_the_new_run(dirs):
    at = new_app()
    at.selectbox(key="new-env").set_value("cartpole").run()
    at.selectbox(key="new-algo").set_value("ppo").run()
    at.text_input(key="hp-ppo-learning_rate").set_value("1e-3")  # equal to the preset: still what the run uses
    at.text_input(key="hp-ppo-gamma").set_value("0.97")
    at.text_input(key="new-timesteps").set_value("512")
    at.button(key=SUBMIT).click().run()
    (run,) = jobs.list_runs()
    assert at.selectbox(key="train-run").value == run.name
    wait_until(lambda: (run.path / "config.json").exists(), 60)
    config = json.loads((run.path / "config.json").read_text())
    assert config["config"]["learning_rate"] == 1e-3 and config["config"]["gamma"] == 0.97
    assert config["overrides"] == {"gamma": 0.97} and config["timesteps"] == 512


def test_tabs_follow_a_run_to_its_end_without_a_reload(dirs):
    at = new_app()
    at.selectbox(key="new-algo").set_value("ppo").run()
    at.text_input(key="new-timesteps").set_value("512")
    at.button(key=SUBMIT).click().run()
    (run,) = jobs.list_runs()
    wait_until(lambda: jobs.run_status(run.path) == "finished", 90)
    at.run()
    assert "finished" in at.selectbox(key="train-run").format_func(run.name)
    assert at.button(key="stop").disabled
    assert at.button(key="export").disabled is False


def test_compare_shows_groups_of_seeds_with_intervals(dirs):
    from thrust_app.training.trainer import train

    for lr in ("3e-3", "1e-5"):
        for seed in (0, 1):
            train(
                "a2c",
                "bandit",
                timesteps=512,
                seed=seed,
                run_dir=dirs / "runs" / f"lr{lr}-s{seed}",
                eval_episodes=10,
                overrides={"learning_rate": lr},
                progress=False,
                log=lambda _: None,
            )
    at = new_app()
    groups, improvements = (
        frame.value for frame in at.dataframe if "IQM [95% CI]" in frame.value.columns or "X" in frame.value.columns
    )
    assert sorted(groups["group"]) == ["a2c thrust/Bandit-v0 learning_rate=0.003", "a2c thrust/Bandit-v0 learning_rate=1e-05"]
    assert list(groups["runs"]) == [2, 2] and groups["IQM [95% CI]"].str.contains(r"\[").all()
    assert len(improvements) == 1
    at.multiselect(key="compare-group-by").set_value(["seed"]).run()
    groups = next(frame.value for frame in at.dataframe if "IQM [95% CI]" in frame.value.columns)
    assert sorted(groups["group"]) == ["seed=0", "seed=1"]
    assert any(button.label == "Download the figure" for button in at.get("download_button"))  # rliable's figure
    runs = next(frame.value for frame in at.dataframe if "tags" in frame.value.columns)  # the Runs tab tells them apart
    assert sorted(runs["learning_rate"]) == ["0.003", "0.003", "1e-05", "1e-05"]


def test_compare_separates_presets_scores_early_stopped_runs_and_gives_no_p_for_one_run(dirs):
    """Issue #40: a default-preset run was merged into the fast preset's group, and runs stopped at the threshold
    all scored alike by their last evaluation."""
    from thrust_app.training.trainer import train

    for preset, seeds in (("fast", (0, 1, 2)), ("default", (0,))):
        for seed in seeds:
            train("ppo", "cartpole", timesteps=2048, seed=seed, preset=preset, run_dir=dirs / "runs" / f"{preset}-s{seed}",
                  eval_every=512, stop_at_return=60, progress=False, log=lambda _: None)  # fmt: skip
    at = new_app()
    groups = next(frame.value for frame in at.dataframe if "IQM [95% CI]" in frame.value.columns)
    assert sorted(groups["runs"]) == [1, 3] and all("preset=" in name for name in groups["group"])
    assert not any("X" in frame.value.columns for frame in at.dataframe)  # the only pair has a group of one run
    assert any("No P for groups of one run" in caption.value for caption in at.caption)
    solved = [json.loads((path / "summary.json").read_text())["solved_at_step"] for path in (dirs / "runs").iterdir()]
    at.selectbox(key="compare-score").set_value("steps").run()
    groups = next(frame.value for frame in at.dataframe if "IQM [95% CI]" in frame.value.columns)
    assert groups["reached"].sum() == sum(step is not None for step in solved) and not at.exception


def test_every_tab_says_what_to_do_when_there_is_nothing_yet(dirs):
    """Issue #40: the Export tab's empty state was blank."""
    at = new_app()
    infos = [element.value for element in at.info]
    assert any(text.startswith("Nothing to export yet: train a run in **New run**") for text in infos), infos
    assert any("Runs appear here once they have finished" in text for text in infos), infos  # Compare
    assert any(text.startswith("No runs yet") for text in infos), infos  # Training, Runs


def test_a_message_above_the_tabs_does_not_move_them(dirs):
    """Issue #40: Launch on the Sweeps tab sent the page back to New run. Its success message appeared above the
    tabs, which moved them one place down: the browser takes moved tabs for new ones and shows the first."""
    at = new_app()
    layout = [type(child).__name__ for child in at.main.children.values()]
    at.session_state["flash"] = ("success", "sweep started in runs/x")
    at.run()
    assert [type(child).__name__ for child in at.main.children.values()] == layout
    assert [element.value for element in at.success] == ["sweep started in runs/x"]


def test_tags_are_kept_in_the_run_and_found_by_the_filter(dirs):
    from thrust_app.training.trainer import train

    for name in ("tagged", "other"):
        train(
            "ppo", "bandit", timesteps=256, run_dir=dirs / "runs" / name, eval_episodes=1, progress=False, log=lambda _: None
        )
    jobs.write_notes(dirs / "runs" / "tagged", ["baseline", "lr-sweep"], "the first try")
    at = new_app()
    at.text_input(key="runs-filter").set_value("lr-sweep").run()
    table = next(frame.value for frame in at.dataframe if "tags" in frame.value.columns)
    assert list(table["run"]) == ["tagged"] and table["tags"].iloc[0] == "baseline, lr-sweep"
    assert jobs.read_notes(dirs / "runs" / "tagged")["text"] == "the first try"
    assert "success_rate" not in table.columns  # the bandit reports no success


def test_the_runs_table_shows_a_goal_envs_success_rate(dirs):
    from thrust_app.training.trainer import train

    overrides = {"replay_buffer_class": "HerReplayBuffer", "learning_starts": 100, "hidden": "16,16"}
    train("sac", "ThrustTest/PointGoal-v0", timesteps=200, run_dir=dirs / "runs" / "goal", eval_episodes=4,
          overrides=overrides, progress=False, log=lambda _: None)  # fmt: skip
    table = next(frame.value for frame in new_app().dataframe if "tags" in frame.value.columns)
    rate = table["success_rate"].iloc[0]
    assert rate == json.loads((dirs / "runs" / "goal" / "summary.json").read_text())["eval_success_rate"]


def choose_in_browser(page, key: str, option: str) -> None:
    """Pick `option` in the Streamlit select box `key`, as a user does: open it, click the option."""
    page.locator(f".st-key-{key} input:visible").first.click()
    page.get_by_role("option", name=option, exact=True).click()


@pytest.mark.skipif(
    not os.environ.get("THRUST_REQUIRE_BROWSER") and not CHROMIUM.exists(),
    reason="needs Debian chromium at /usr/bin/chromium (.ci/run installs it)",
)
def test_in_a_browser_the_form_shows_the_chosen_pairs_preset(dirs):
    """Issue #40: in a real browser, Timesteps stayed at bandit's 4,000 after choosing cartpole and PPO (AppTest
    showed the right value: the browser kept what it showed unless the app wrote the field's state)."""
    from playwright.sync_api import expect

    with dashboard_page() as page:
        field = lambda key: page.locator(f".st-key-{key} input:visible").first  # noqa: E731
        expect(field("new-timesteps")).to_have_value("4000", timeout=30_000)  # the form's first render, on a busy host
        choose_in_browser(page, "new-env", "cartpole")
        choose_in_browser(page, "new-algo", "ppo")
        expect(field("new-timesteps")).to_have_value("100000", timeout=20_000)
        expect(field("hp-ppo-n_steps")).to_have_value("32")
        field("hp-ppo-gamma").fill("0.95")
        field("hp-ppo-gamma").press("Tab")
        choose_in_browser(page, "new-device", "cpu")  # another rerun: a typed value stays
        expect(field("hp-ppo-gamma")).to_have_value("0.95", timeout=20_000)
        choose_in_browser(page, "new-env", "pendulum")  # another pair: its preset, typed values forgotten
        expect(field("hp-ppo-n_steps")).to_have_value("1024", timeout=20_000)
        expect(field("new-timesteps")).to_have_value("100000")
        expect(field("hp-ppo-gamma")).to_have_value("0.9")


@pytest.mark.skipif(
    not os.environ.get("THRUST_REQUIRE_BROWSER") and not CHROMIUM.exists(),
    reason="needs Debian chromium at /usr/bin/chromium (.ci/run installs it)",
)
def test_in_a_browser_the_training_tab_stays_on_the_run_it_resumed(dirs):
    """Issue #40: after Resume the Run box jumped to another, finished run (the resumed run moved to the top of
    the newest-first list, and the browser keeps a choice by its place)."""
    from playwright.sync_api import expect

    from thrust_app.training.trainer import train

    def stop_early(trainer) -> None:
        if trainer.step >= 1024:
            trainer.request_stop()

    quiet = {"progress": False, "log": lambda _: None}
    train("ppo", "cartpole", timesteps=20_000, run_dir=dirs / "runs" / "resumed", on_iteration=stop_early, **quiet)
    time.sleep(1.1)  # a newer folder time: the finished run comes first in the list
    train("ppo", "bandit", timesteps=512, run_dir=dirs / "runs" / "finished", **quiet)
    with dashboard_page() as page:
        page.get_by_role("tab", name="Training").click()
        box = page.locator(".st-key-train-run input:visible").first
        expect(box).to_have_value("finished · finished", timeout=20_000)
        choose_in_browser(page, "train-run", "resumed · stopped")
        expect(box).to_have_value("resumed · stopped", timeout=20_000)
        resume = page.locator(".st-key-resume button:visible").first
        # the box shows the choice at once; Resume turns on when the app's rerun for it arrives (slow on a busy host)
        expect(resume).to_be_enabled(timeout=60_000)
        resume.click()
        expect(box).to_have_value("resumed · finished", timeout=90_000)  # through starting and running
        time.sleep(2 * 2)  # two more refreshes of the tab
        assert box.input_value() == "resumed · finished"
