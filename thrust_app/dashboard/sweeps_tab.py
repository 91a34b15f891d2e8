"""The Sweeps tab: launch a sweep file, watch its trials, stop and resume it (jobs in sweeps.py)."""

from __future__ import annotations

from pathlib import Path

import altair as alt
import pandas as pd
import streamlit as st

from thrust_app.algos import ALGOS
from thrust_app.dashboard import jobs
from thrust_app.dashboard.compare_tab import group_tables
from thrust_app.dashboard.runs_tab import hyperparameter_view
from thrust_app.dashboard.widgets import REFRESH_S, fmt_value
from thrust_app.envs.core import ALIASES
from thrust_app.runs.files import METRICS_FILE
from thrust_app.training.presets import get_preset

EXAMPLE_SWEEPS = Path(__file__).resolve().parents[2] / "examples" / "sweeps"


def launch_sweep_form() -> None:
    """Start a sweep: a search written as a sweep file, or N seeds of one config."""
    from thrust_app.dashboard import sweeps

    kind = st.radio("Launch", ["a search (sweep YAML)", "N seeds of one config"], horizontal=True, key="sweep-kind")
    workers = st.number_input("Worker processes (0: one per core)", 0, 64, 0, key="sweep-workers")
    if kind.startswith("a search"):
        examples = sorted(EXAMPLE_SWEEPS.glob("*.yaml"))
        example = st.selectbox("Start from", examples, format_func=lambda p: p.name, key="sweep-example")
        text = st.text_area("Sweep file (docs/sweeps.md lists the keys)", example.read_text() if example else "", height=260)
    else:
        algo = st.selectbox("Algorithm", list(ALGOS), key="seeds-algo")
        env = st.selectbox("Environment", list(ALIASES), index=1, key="seeds-env")
        preset = get_preset(algo, ALIASES[env])
        timesteps = st.number_input("Timesteps per run", 1, 10**9, preset.timesteps, key=f"seeds-steps-{algo}-{env}")
        seeds = st.number_input("Seeds", 2, 100, 5, key="seeds-count")
        name = st.text_input("Name", f"{algo}-{env}-{seeds}seeds", key=f"seeds-name-{algo}-{env}-{seeds}")
        batch = algo in ("ppo", "a2c") and st.checkbox(
            "Train the seeds as one batch in one process (their nets stacked; about 1.7x a sweep's speed at 32 seeds)",
            key="seeds-batch",
            help="batch_seeds: true (docs/sweeps.md): PPO and A2C with an MLP policy, no gSDE",
        )
        text = sweeps.seeds_yaml(algo, env, int(timesteps), int(seeds), {}, name, batch)
        st.code(text, language="yaml")
    if st.button("Launch sweep", key="sweep-launch", type="primary"):
        try:
            folder = sweeps.start_sweep(text, workers=int(workers) or None)
            st.session_state["flash"] = ("success", f"sweep started in {folder}")
            st.rerun()
        except ValueError as err:
            st.error(str(err))


def sweep_curves(info, best) -> alt.Chart | None:
    """Every trial run's evaluation curve; the best trial's in colour, the rest grey."""
    points = [
        {
            "run": run.name,
            "trial": trial.number,
            "best": best is not None and trial.number == best.number,
            "step": r["step"],
            "eval_mean": r["eval_mean"],
        }
        for trial in info.trials
        for run in trial.runs
        for r in jobs.metrics(run)[1]
    ]
    if not points:
        return None
    return (
        alt.Chart(pd.DataFrame(points))
        .mark_line(point=True)
        .encode(
            x=alt.X("step:Q", title="env steps"),
            y=alt.Y("eval_mean:Q", title="eval return"),
            detail="run:N",
            color=alt.condition("datum.best", alt.value("#d62728"), alt.value("#bbbbbb")),
            opacity=alt.condition("datum.best", alt.value(1.0), alt.value(0.5)),
            tooltip=["trial", "run", "step", "eval_mean"],
        )
        .properties(height=300)
    )


def sweep_panel(info) -> None:
    """One sweep: what it searches, its best trial so far, its controls and its trials."""
    spec, best = info.spec, info.best()
    st.caption(
        f"{spec.algo} on {spec.env}, {spec.trials} trials x {spec.seeds} seed(s) x {spec.timesteps:,} steps; metric "
        f"{spec.metric}, sampler {spec.sampler}, pruner {spec.pruner} · `{info.path}`"
    )
    if best is not None:
        settings = ", ".join(
            f"{key}={value:.4g}" if isinstance(value, float) else f"{key}={value}" for key, value in best.params.items()
        )
        st.markdown(
            f"**Best so far**: trial {best.number}, {spec.metric} = {best.score:.4g}" + (f", {settings}" if settings else "")
        )
    sweep_controls(info)
    sweep_trials(info, best)


def sweep_controls(info) -> None:
    """Stop a running sweep, or resume one that has trials left."""
    from thrust_app.dashboard import sweeps

    spec = info.spec
    left, right = st.columns(2)
    done = info.counts().get("complete", 0) + info.counts().get("pruned", 0)
    if info.running and left.button("Stop", key=f"sweep-stop-{info.name}"):
        sweeps.stop_sweep(info.path)
        st.rerun()
    if not info.running and done < spec.trials and right.button("Resume", key=f"sweep-resume-{info.name}"):
        sweeps.resume_sweep(info.path)
        st.rerun()


def search_charts(info) -> None:
    """Optuna's two views of a search: the optimisation history (each finished trial's score and the best so far)
    and the parameter importance (Optuna's `importance` module, fANOVA), once two trials have finished."""
    from thrust_app.sweeps.spec import METRICS
    from thrust_app.sweeps.trials import param_importance

    finished = [t for t in info.trials if t.state == "complete" and t.score is not None]
    if len(finished) < 2 or not info.spec.search:
        return
    best = max if METRICS[info.spec.metric] == "maximize" else min
    history = pd.DataFrame(
        [
            {"trial": t.number, "score": t.score, "best so far": best(u.score for u in finished[: i + 1])}
            for i, t in enumerate(finished)
        ]
    )
    left, right = st.columns(2)
    points = alt.Chart(history).mark_point(filled=True).encode(x="trial:Q", y=alt.Y("score:Q", title=info.spec.metric))
    line = alt.Chart(history).mark_line(interpolate="step-after", color="#db4437").encode(x="trial:Q", y="best so far:Q")
    left.markdown("**Optimisation history**")
    left.altair_chart(alt.layer(points, line).properties(height=240), width="stretch")
    importance = pd.DataFrame([{"setting": k, "importance": v} for k, v in param_importance(info.path).items()])
    right.markdown("**Parameter importance** (fANOVA over the finished trials)")
    bars = alt.Chart(importance).mark_bar().encode(x="importance:Q", y=alt.Y("setting:N", sort="-x", title=None))
    right.altair_chart(bars.properties(height=240), width="stretch")


def sweep_trials(info, best) -> None:
    """The sweep's trials: their table and curves, the settings' effects, the seeds' intervals, the log."""
    from thrust_app.dashboard import sweeps
    from thrust_app.runs.compare import compare

    spec = info.spec
    trials = pd.DataFrame(
        [
            {
                "trial": t.number,
                "state": t.state,
                spec.metric: t.score,
                **{k: fmt_value(v) for k, v in t.params.items()},
                "runs": len(t.runs),
            }
            for t in info.trials
        ]
    )
    if not trials.empty:
        st.dataframe(trials, hide_index=True, width="stretch")
    chart = sweep_curves(info, best)
    if chart is not None:
        st.altair_chart(chart, width="stretch")
    search_charts(info)
    runs = [r for r in jobs.list_runs() if r.path.parent == info.path]
    if spec.search:
        hyperparameter_view(runs, key=f"hp-{info.name}")
    evaluated = [r.path for r in runs if r.summary and (r.path / METRICS_FILE).exists()]
    if spec.seeds > 1 and evaluated:
        st.markdown("**Over seeds** (each trial's runs as one group: IQM and mean with 95% bootstrap intervals)")
        table, pairs, _ = compare(evaluated, ["algo", "env", "config"], reps=2000)
        group_tables(table, pairs, True)
    log = info.path / sweeps.LOG_FILE
    if log.exists():
        with st.popover("Sweep log"):
            st.code("\n".join(log.read_text(errors="replace").splitlines()[-30:]) or "(empty)")


@st.fragment(run_every=2 * REFRESH_S)
def sweep_list() -> None:
    from thrust_app.dashboard import sweeps

    found = sweeps.list_sweeps()
    if not found:
        st.info("No sweeps yet: launch one above, or run `thrust sweep examples/sweeps/ppo_cartpole_lr.yaml`.")
        return
    for info in found:
        counts = ", ".join(f"{n} {state}" for state, n in sorted(info.counts().items())) or "no trials yet"
        with st.expander(f"{info.name} — {info.status} — {counts}", expanded=info is found[0]):
            sweep_panel(info)


def sweeps_tab() -> None:
    """Launch a sweep (a search, or N seeds of one config), watch its trials live, stop and resume it; per
    sweep the trials, the best so far, its curves against the rest, the hyperparameter view and, with
    several seeds, IQM and bootstrap intervals per trial."""
    with st.expander("Launch a sweep", expanded=False):
        launch_sweep_form()
    sweep_list()
