"""The Compare tab: runs grouped over seeds, scored by the final evaluation, the steps or seconds to the
threshold or the area under the curve; IQM and mean with bootstrap intervals, P(better), grouped curves."""

from __future__ import annotations

import altair as alt
import pandas as pd
import streamlit as st

from thrust_app.dashboard import jobs
from thrust_app.dashboard.widgets import REFRESH_S
from thrust_app.runs.files import METRICS_FILE

#: What the Group-by choice offers: the fields of config.json a user tells runs apart by.
GROUP_FIELDS = ["algo", "env", "preset", "timesteps", "stop_at_return", "eval_every", "eval_episodes", "config", "seed"]


@st.fragment(run_every=2 * REFRESH_S)
def compare_tab() -> None:
    """Groups of seeds side by side: per group the chosen score's mean and IQM with 95% bootstrap intervals,
    the probability that one group's run does better than another's, and each group's IQM curve with its band
    (thrust_app/runs/compare.py)."""
    from thrust_app.runs.compare import DEFAULT_GROUP_BY, SCORES, compare, load_groups

    evaluated = [r for r in jobs.list_runs() if (r.path / METRICS_FILE).exists() and r.summary]
    if not evaluated:
        st.info("Runs appear here once they have finished or stopped with an evaluation: train a few seeds in New run.")
        return
    names = [r.name for r in evaluated]
    chosen = st.multiselect("Runs", names, default=names, key="compare-runs")
    left, middle, right = st.columns(3)
    score = left.selectbox("Score", list(SCORES), format_func=lambda key: SCORES[key].label, key="compare-score")
    group_by = middle.multiselect(
        "Group by",
        GROUP_FIELDS,
        default=list(DEFAULT_GROUP_BY),
        key="compare-group-by",
        help="runs that agree on these form one group (by default: every setting except the seed)",
    )
    x_axis = right.radio("x axis", ["step", "wall_s"], horizontal=True, key="compare-x")
    paths = [r.path for r in evaluated if r.name in chosen]
    if not paths or not group_by:
        return
    table, pairs, _ = compare(paths, group_by, reps=2000, score=score)
    group_tables(table, pairs, SCORES[score].higher_is_better)
    groups = load_groups(paths, group_by)[0]
    st.altair_chart(group_curves(groups, x_axis), width="stretch")
    rliable_figure(groups, table, score, x_axis)


def rliable_figure(groups: dict, table: list, score: str, x_axis: str) -> None:
    """rliable's three views in one figure (the curves, the interval estimates, the performance profile), as
    `thrust compare --plot` writes it, to look at and to download."""
    import tempfile
    from pathlib import Path

    from thrust_app.runs.compare_plot import plot_comparison

    with st.expander("Interval estimates and performance profile (rliable's figure)"):
        with tempfile.TemporaryDirectory() as folder:
            png = plot_comparison(groups, table, score, Path(folder) / "compare.png", x_axis).read_bytes()
        st.image(png)
        st.download_button("Download the figure", png, "compare.png", "image/png", key="compare-figure")


def group_tables(table, pairs, higher_is_better: bool) -> None:
    """Per group, best first: runs, how many reached the threshold, IQM and mean with their 95% intervals, to the
    digits the intervals justify; then P(X better than Y) for each pair of groups of two runs or more."""
    from thrust_app.runs.compare import with_ci

    rows = [
        {
            "group": row.name,
            "runs": row.runs,
            "reached": row.reached,
            "IQM [95% CI]": with_ci(row.iqm, row.iqm_ci),
            "mean [95% CI]": with_ci(row.mean, row.mean_ci),
        }
        for row in sorted(table, key=lambda row: -row.iqm if higher_is_better else row.iqm)
    ]
    st.dataframe(pd.DataFrame(rows), hide_index=True, width="stretch")
    improvements = [
        {"P(X better than Y)": f"{p:.2f}", "95% CI": f"[{low:.2f}, {high:.2f}]", "X": a, "Y": b}
        for (a, b), (p, (low, high)) in pairs.items()
        if a < b
    ]
    if improvements:
        st.dataframe(pd.DataFrame(improvements), hide_index=True, width="stretch")
    singles = [row.name for row in table if row.runs == 1]
    if singles:
        st.caption(f"No P for groups of one run: {', '.join(singles)}. Train more seeds to compare them.")


def group_curves(groups: dict, x_axis: str) -> alt.Chart:
    """Each group's evaluation curve: the IQM of its runs at each step with its 95% bootstrap band, the legend
    below the chart with the groups' full names."""
    from thrust_app.runs.compare import group_curve

    points = pd.DataFrame([{"group": name, **row} for name, runs in groups.items() for row in group_curve(runs, x_axis)])
    colour = alt.Color("group:N", legend=alt.Legend(orient="bottom", columns=1, labelLimit=0, title=None))
    x = alt.X("x:Q", title="env steps" if x_axis == "step" else "seconds")
    band = alt.Chart(points).mark_area(opacity=0.2).encode(x=x, y="low:Q", y2="high:Q", color=colour)
    line = (
        alt.Chart(points)
        .mark_line(point=True)
        .encode(
            x=x,
            y=alt.Y("iqm:Q", title="evaluation return (IQM over seeds)"),
            color=colour,
            tooltip=["group", alt.Tooltip("x:Q", title=x_axis), alt.Tooltip("iqm:Q", format=".4g"), "runs"],
        )
    )
    return alt.layer(band, line).properties(height=340)
