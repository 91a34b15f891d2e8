"""The Compare tab: runs grouped over seeds, IQM and mean with bootstrap intervals, P(improvement), curves."""

from __future__ import annotations

import altair as alt
import pandas as pd
import streamlit as st

from thrust_app.dashboard import jobs
from thrust_app.dashboard.widgets import REFRESH_S
from thrust_app.runs.files import METRICS_FILE


@st.fragment(run_every=2 * REFRESH_S)
def compare_tab() -> None:
    """Groups of seeds side by side: eval curves on one chart, and per group the mean and IQM with 95%
    bootstrap intervals and the probability of improvement between groups (thrust_app/runs/compare.py)."""
    from thrust_app.runs.compare import DEFAULT_GROUP_BY, compare

    evaluated = [r for r in jobs.list_runs() if (r.path / METRICS_FILE).exists() and r.summary]
    if not evaluated:
        st.info("Runs appear here once they have finished or stopped with an evaluation.")
        return
    names = [r.name for r in evaluated]
    chosen = st.multiselect("Runs", names, default=names, key="compare-runs")
    group_by = st.multiselect(
        "Group by",
        ["algo", "env", "config", "seed"],
        default=list(DEFAULT_GROUP_BY),
        key="compare-group-by",
        help="runs that agree on these form one group (by default: every setting except the seed)",
    )
    x_axis = st.radio("x axis", ["step", "wall_s"], horizontal=True, key="compare-x")
    picked = [r for r in evaluated if r.name in chosen]
    if not picked or not group_by:
        return
    table, pairs, _ = compare([r.path for r in picked], group_by, reps=2000)
    group_tables(table, pairs)
    st.altair_chart(group_curves(picked, group_by, x_axis), width="stretch")


def group_tables(table, pairs) -> None:
    """Per group: runs, IQM and mean with their 95% intervals; then P(X > Y) for each pair of groups."""
    rows = [
        {
            "group": row.name,
            "runs": row.runs,
            "IQM": row.iqm,
            "IQM 95% CI": _interval_text(row.iqm_ci),
            "mean": row.mean,
            "mean 95% CI": _interval_text(row.mean_ci),
        }
        for row in sorted(table, key=lambda row: -row.iqm)
    ]
    st.dataframe(pd.DataFrame(rows), hide_index=True, width="stretch")
    if pairs:
        improvements = [
            {"P(X > Y)": f"{p:.2f}", "95% CI": _interval_text(interval), "X": a, "Y": b}
            for (a, b), (p, interval) in pairs.items()
            if a < b
        ]
        st.dataframe(pd.DataFrame(improvements), hide_index=True, width="stretch")


def _interval_text(interval: tuple[float, float]) -> str:
    low, high = interval
    return "n/a (1 run)" if low != low else f"[{low:.4g}, {high:.4g}]"  # NaN: a single run has no interval


def group_curves(picked: list[jobs.RunInfo], group_by: list[str], x_axis: str) -> alt.Chart:
    """Every run's evaluation curve, coloured by its group."""
    from thrust_app.runs.compare import group_runs, load_score

    groups = group_runs([score for score in map(load_score, [r.path for r in picked]) if score], group_by)
    points = [
        {"group": name, "run": run.path.name, "step": step, "wall_s": wall, "eval_mean": value}
        for name, runs in groups.items()
        for run in runs
        for step, wall, value in run.curve
    ]
    return (
        alt.Chart(pd.DataFrame(points))
        .mark_line(point=True, opacity=0.7)
        .encode(
            x=alt.X(f"{x_axis}:Q", title="env steps" if x_axis == "step" else "seconds"),
            y=alt.Y("eval_mean:Q", title="eval return"),
            color="group:N",
            detail="run:N",
            tooltip=["group", "run", "step", "eval_mean"],
        )
        .properties(height=340)
    )
