"""The Training tab: the selected run's progress and charts, live, with Stop, Resume and notes."""

from __future__ import annotations

import altair as alt
import pandas as pd
import streamlit as st

from thrust_app.dashboard import jobs
from thrust_app.dashboard.widgets import REFRESH_S, chosen_key, pick_run
from thrust_app.runs.curves import curves, return_chart
from thrust_app.runs.files import LAST_CHECKPOINT


def solved_step(info: jobs.RunInfo, evals: list[dict]) -> int | None:
    """The summary's solved step, or while training the first evaluation at the env's threshold."""
    if info.summary:
        return info.summary.get("solved_at_step")
    from thrust_app.training.run_spec import SOLVED_AT

    threshold = info.config.get("stop_at_return")
    threshold = SOLVED_AT.get(info.config.get("env")) if threshold is None else threshold
    return next((e["step"] for e in evals if threshold is not None and e["eval_mean"] >= threshold), None)


def metric_panels(losses: pd.DataFrame) -> alt.FacetChart:
    """One small chart per logged value (its own y axis: a loss, epsilon and an entropy do not share a
    scale), smoothed and scaled as the controls above the run say."""
    smoothing = st.session_state.get("panel-smoothing", 0.0)
    x_axis = "wall_s" if st.session_state.get("panel-x") == "wall-clock" else "step"
    if smoothing:  # TensorBoard's smoothing: an exponential moving average per metric
        losses = losses.assign(value=losses.groupby("loss")["value"].transform(lambda v: v.ewm(alpha=1 - smoothing).mean()))
    scale = alt.Scale(type="symlog") if st.session_state.get("panel-log") else alt.Scale(zero=False)
    return (
        alt.Chart(losses)
        .mark_line()
        .encode(
            x=alt.X(f"{x_axis}:Q", title="env steps" if x_axis == "step" else "seconds"),
            y=alt.Y("value:Q", title=None, scale=scale),
            tooltip=["loss", "step", alt.Tooltip("value:Q", format=".4g")],
        )
        .properties(height=160, width=260)
        .facet(facet=alt.Facet("loss:N", title=None), columns=3)
        .resolve_scale(y="independent")
    )


def notes_form(info: jobs.RunInfo) -> None:
    """Tags and a note for the run, kept in its folder (the Runs filter finds runs by tag)."""
    saved = jobs.read_notes(info.path)
    with st.expander(f"Tags and notes{': ' + ', '.join(saved['tags']) if saved['tags'] else ''}"):
        with st.form(f"notes-{info.name}"):
            tags = st.text_input("Tags (comma separated)", ", ".join(saved["tags"]), key=f"tags-{info.name}")
            text = st.text_area("Notes", saved["text"], key=f"note-{info.name}")
            if st.form_submit_button("Save"):
                jobs.write_notes(info.path, [tag.strip() for tag in tags.split(",") if tag.strip()], text)
                st.toast(f"Saved the notes of {info.name}")


def panel_controls() -> None:
    """Smoothing, log scale and x axis of the metric panels (TensorBoard's controls)."""
    columns = st.columns(3)
    columns[0].slider("Smoothing", 0.0, 0.99, 0.0, 0.01, key="panel-smoothing")
    columns[1].checkbox("Log scale (symlog)", key="panel-log")
    columns[2].radio("x axis", ["step", "wall-clock"], horizontal=True, key="panel-x")


def live_panel(info: jobs.RunInfo) -> None:
    """The run's progress, figures, curves and, for a failed run, its log: from the same read of its status as the
    Stop and Resume buttons above it, so the two never disagree within one refresh."""
    p = jobs.progress(info)
    eta = f" · ETA {p['eta_s']:.0f} s" if p["eta_s"] is not None else ""
    sps = f" · {p['sps']:,.0f} steps/s" if p["sps"] else ""
    # the last iteration may end past the budget: then say "budget", not "of"
    of = f"of {p['target']:,}" if p["step"] <= p["target"] else f"(budget {p['target']:,})"
    st.progress(min(p["fraction"], 1.0), text=f"{info.status}: step {p['step']:,} {of}{sps}{eta}")
    s = info.summary or {}
    train, evals = jobs.metrics(info.path)
    cols = st.columns(4)
    cols[0].metric("Algorithm / env", f"{info.config['algo']} · {info.config['env'].split('/')[-1]}")
    cols[1].metric("Last eval", f"{evals[-1]['eval_mean']:.3g}" if evals else "—")
    cols[2].metric("Solved at step", f"{solved_step(info, evals):,}" if solved_step(info, evals) else "—")
    cols[3].metric("Device", s.get("device", info.config.get("device", "—")))
    returns, ev, losses = curves(train, evals)
    chart = return_chart(returns, ev)
    if chart is not None:
        st.markdown("**Episode return** (grey: training episodes; blue: deterministic evaluation ± std)")
        st.altair_chart(chart, width="stretch")
    else:
        st.caption("Waiting for the first metrics…")
    if not losses.empty:
        st.markdown("**Losses and schedules**, one panel each")
        st.altair_chart(metric_panels(losses), width="stretch")
    log = jobs.read_log_tail(info.path, 5)
    if info.failure:
        st.error(f"Training failed ({info.failure.splitlines()[0]}); the end of its log:")
        st.code("\n".join(info.failure.splitlines()[1:]), language=None)
    elif info.status == "incomplete" and log:
        st.code(log, language=None)


@st.fragment(run_every=REFRESH_S)
def training_tab() -> None:
    """The selected run, live: re-read every REFRESH_S seconds, so a run starting, stopping or finishing
    shows without a reload."""
    runs = jobs.list_runs()
    info = pick_run("Run", runs, key="train-run")
    if info is None:
        return
    cols = st.columns([1, 1, 4])
    if cols[0].button("Stop", key="stop", disabled=not info.active, help="stop at the next iteration; keeps the checkpoint"):
        jobs.stop_run(info.path)
        st.toast(f"Stopping {info.name}…")
    can_resume = (
        not info.active
        and info.status in ("stopped", "interrupted", "terminated", "incomplete")
        and (info.path / LAST_CHECKPOINT).exists()
    )
    if cols[1].button("Resume", key="resume", disabled=not can_resume, help="continue from the last checkpoint"):
        jobs.resume_run(info.path)
        st.session_state[chosen_key("train-run")] = info.name  # it moves to the top of the list: keep it chosen
        st.toast(f"Resuming {info.name}…")
    notes_form(info)
    panel_controls()
    live_panel(info)
