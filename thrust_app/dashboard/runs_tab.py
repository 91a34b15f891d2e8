"""The Runs tab: every run with its status, the settings' effects, delete, and rl-zoo YAML out."""

from __future__ import annotations

from collections import Counter

import altair as alt
import pandas as pd
import streamlit as st

from thrust_app.dashboard import jobs
from thrust_app.dashboard.widgets import REFRESH_S, fmt_value


def delete_run_form(runs: list[jobs.RunInfo]) -> None:
    """Delete one run folder, after an explicit confirmation."""
    with st.expander("Delete a run"):
        victim = st.selectbox("Run to delete", [r.name for r in runs], key="delete-run")
        confirm = st.checkbox(f"Yes, delete runs/{victim} and everything in it", key="delete-confirm")
        if st.button("Delete", key="delete", disabled=not confirm):
            try:
                jobs.delete_run(next(r.path for r in runs if r.name == victim))
                st.session_state.flash = ("success", f"Deleted {victim}.")
                st.rerun()
            except RuntimeError as err:
                st.error(str(err))


@st.fragment(run_every=2 * REFRESH_S)
def hyperparameter_view(runs: list[jobs.RunInfo], key: str = "hp") -> None:
    """Which settings gave which return, for the runs of one algo on one env: the settings that vary as a
    table, and as parallel coordinates (each axis scaled to its own range, lines coloured by the return)."""
    finished = [r for r in runs if r.summary and r.summary.get("eval_mean") is not None]
    counts = Counter((r.config["algo"], r.config["env"]) for r in finished)
    families = sorted(counts, key=lambda family: -counts[family])  # the most-run family first
    if not families:
        return
    st.markdown("**Hyperparameters**")
    family = st.selectbox("Algorithm and env", families, format_func=lambda f: f"{f[0]} on {f[1]}", key=f"{key}-family")
    members = [r for r in finished if (r.config["algo"], r.config["env"]) == family]
    rows = pd.DataFrame(
        [
            {
                "run": r.name,
                **{k: fmt_value(v) for k, v in r.config["config"].items()},
                "seed": r.config.get("seed"),
                "eval_mean": r.summary["eval_mean"],
            }
            for r in members
        ]
    )
    varying = [c for c in rows.columns if c not in ("run", "eval_mean") and rows[c].nunique() > 1]
    st.dataframe(rows[["run", *varying, "eval_mean"]], hide_index=True, width="stretch")
    numeric = [c for c in varying if pd.to_numeric(rows[c], errors="coerce").notna().all()]
    if not numeric:
        return
    long = rows.melt(id_vars=["run", "eval_mean"], value_vars=numeric, var_name="setting", value_name="value")
    long["value"] = pd.to_numeric(long["value"])
    span = long.groupby("setting")["value"].transform(lambda v: (v.max() - v.min()) or 1.0)
    long["position"] = (long["value"] - long.groupby("setting")["value"].transform("min")) / span
    st.altair_chart(
        alt.Chart(long)
        .mark_line(point=True)
        .encode(
            x=alt.X("setting:N", title=None),
            y=alt.Y("position:Q", title="position in the setting's range"),
            detail="run:N",
            color=alt.Color("eval_mean:Q", scale=alt.Scale(scheme="viridis")),
            tooltip=["run", "setting", "value", "eval_mean"],
        )
        .properties(height=300),
        width="stretch",
    )


def zoo_yaml_download(runs: list[jobs.RunInfo]) -> None:
    """A run's settings as an rl-baselines3-zoo hyperparameter file."""
    from thrust_app.training.zoo_yaml import to_zoo_yaml

    runs = [r for r in runs if "config" in r.config]  # a run just launched has its settings once it writes config.json
    if not runs:
        return
    name = st.selectbox("Settings of run, as rl-zoo YAML", [r.name for r in runs], key="yaml-run")
    info = next(r for r in runs if r.name == name)
    st.download_button("Download YAML", to_zoo_yaml(info.config), f"{name}.yml", "application/x-yaml", key="yaml")


def varying_settings(runs: list[jobs.RunInfo], run: jobs.RunInfo) -> dict[str, str]:
    """`run`'s value of every hyperparameter that differs between the runs that have it (the table's and the
    CSV's columns that tell runs apart); empty where the run's algorithm has no such setting."""
    values: dict[str, set[str]] = {}
    for other in runs:
        for key, value in other.config.get("config", {}).items():
            values.setdefault(key, set()).add(fmt_value(value))
    config = run.config.get("config", {})
    return {key: fmt_value(config[key]) if key in config else "" for key in sorted(values) if len(values[key]) > 1}


def runs_tab() -> None:
    runs = jobs.list_runs()
    if not runs:
        st.info("No runs yet.")
        return
    table = pd.DataFrame(
        [
            {
                "run": r.name,
                "tags": ", ".join(jobs.read_notes(r.path)["tags"]),
                "algo": r.config.get("algo"),
                "env": r.config.get("env"),
                "status": r.status,
                "steps": (r.summary or {}).get("timesteps"),
                "eval_mean": (r.summary or {}).get("eval_mean"),
                "success_rate": (r.summary or {}).get("eval_success_rate"),  # goal envs' is_success
                "solved_at_step": (r.summary or {}).get("solved_at_step"),
                "wall_s": (r.summary or {}).get("wall_s"),
                "seed": r.config.get("seed"),
                "preset": r.config.get("preset"),
                **varying_settings(runs, r),
            }
            for r in runs
        ]
    )
    if table["success_rate"].isna().all():  # no run on an env that reports success
        table = table.drop(columns="success_rate")
    search = st.text_input("Filter", key="runs-filter", placeholder="any part of a name, tag, algo, env or status")
    if search:
        table = table[table.astype(str).apply(lambda row: row.str.contains(search, case=False, regex=False)).any(axis=1)]
    st.dataframe(table, hide_index=True, width="stretch")
    st.download_button("Download as CSV", table.to_csv(index=False), "runs.csv", "text/csv", key="runs-csv")
    hyperparameter_view(runs)
    zoo_yaml_download(runs)
    delete_run_form(runs)
