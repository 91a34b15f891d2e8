"""Thrust's training dashboard (Streamlit). Start it with `thrust app` (or `make run`).

Tabs: New run (choose env, algorithm, device and hyperparameters), Training (live progress and
charts of the selected run, Stop and Resume), Runs (overview and delete), Compare (groups of seeds
with IQM, bootstrap intervals and probability of improvement), Sweeps (launch, watch, stop and resume
`thrust sweep`; see sweeps.py), Export & play (ONNX bundle,
parity figures, a link to the browser player), Watch (an episode of a trained policy as a video).
Training happens in `thrust train` processes (see jobs.py), so nothing here can kill or corrupt a run.
"""

from __future__ import annotations

import dataclasses
import os
from collections import Counter
from pathlib import Path
from typing import Any

import altair as alt
import pandas as pd
import streamlit as st

from thrust_app.algos import ALGOS
from thrust_app.config import ConfigError, apply_overrides, field_help
from thrust_app.dashboard import jobs
from thrust_app.envs.core import ALIASES, Box, Discrete
from thrust_app.interop.bundle import BundleError
from thrust_app.runs.files import LAST_CHECKPOINT, METRICS_FILE
from thrust_app.training.presets import DEFAULT_PRESET, get_preset, preset_names

OTHER_ENV = "other gymnasium id…"
REFRESH_S = 2.0


# -- shared helpers -------------------------------------------------------------------------------
@st.cache_data(show_spinner=False)
def action_kind(env_name: str) -> str:
    """'discrete' or 'box' for an env (a ValueError with the reason if it cannot be trained)."""
    from thrust_app.envs import env_spaces

    _, action_space = env_spaces(env_name)
    return "discrete" if isinstance(action_space, Discrete) else "box"


@st.cache_data(show_spinner=False)
def machine_devices() -> str:
    from thrust_app.training.device import cuda_summary

    return cuda_summary()


def export_root() -> Path:
    from thrust_app.web.server import EXPORT_DIR

    return Path(os.environ.get("THRUST_EXPORT_DIR", EXPORT_DIR))


@st.cache_resource(show_spinner=False)
def player_server():
    """The browser player, served alongside the dashboard on 127.0.0.1 (one per dashboard process)."""
    from thrust_app.web.server import PlayerServer, ensure_node_modules

    ensure_node_modules(log=lambda _: None)
    # Any free port unless told one: `thrust web` keeps its own port 8000 for itself.
    port = int(os.environ.get("THRUST_PLAYER_PORT", "0"))
    try:
        return PlayerServer(port=port, export_dir=export_root()).start()
    except OSError:  # the port asked for is taken: any free port will do
        return PlayerServer(port=0, export_dir=export_root()).start()


def fmt_value(value) -> str:
    return ",".join(map(str, value)) if isinstance(value, (list, tuple)) else str(value)


def run_label(info: jobs.RunInfo) -> str:
    return f"{info.name} · {info.status}"


def pick_run(label: str, runs: list[jobs.RunInfo], key: str) -> jobs.RunInfo | None:
    if not runs:
        st.info("No runs yet: start one in **New run**.")
        return None
    names = [r.name for r in runs]
    if st.session_state.get(key) not in names:  # first show, or its run is gone: the current run, else the newest
        wanted = st.session_state.get("current_run")
        st.session_state[key] = wanted if wanted in names else names[0]
    name = st.selectbox(label, names, key=key, format_func=lambda n: run_label(runs[names.index(n)]))
    st.session_state.current_run = name
    return runs[names.index(name)]


# -- New run --------------------------------------------------------------------------------------
def hp_key(algo: str, name: str) -> str:
    return f"hp-{algo}-{name}"


def shown_preset(algo: str, env_name: str):
    """The preset a run of `algo` on `env_name` starts from (the form's choice, else the pair's default one):
    looked up by the env's full id, as the trainer does."""
    from thrust_app.training.run_spec import resolve_env_name

    return get_preset(algo, resolve_env_name(env_name), st.session_state.get("new-preset", DEFAULT_PRESET))


def reset_form_values() -> None:
    """The env or the algorithm changed: back to the pair's default preset, typed values forgotten."""
    st.session_state.pop("new-preset", None)
    reset_typed_values()


def reset_typed_values() -> None:
    """The preset changed: forget typed values, so the form shows the preset's."""
    for key in [key for key in st.session_state if str(key).startswith("hp-") or key == "new-timesteps"]:
        del st.session_state[key]


def read_hyperparameters(algo: str, env_name: str, errors: dict[str, str]) -> dict[str, Any]:
    """Every hyperparameter field of the form, parsed and checked; a bad one's message goes to `errors`."""
    base = apply_overrides(ALGOS[algo].Config(), shown_preset(algo, env_name).config)
    values = {}
    for f in dataclasses.fields(base):
        raw = st.session_state.get(hp_key(algo, f.name), fmt_value(getattr(base, f.name)))
        try:
            values[f.name] = getattr(apply_overrides(base, {f.name: raw}, algo), f.name)
        except ConfigError as err:
            errors[f.name] = str(err)
    return values


def read_whole_numbers(minimums: dict[str, int], errors: dict[str, str]) -> dict[str, int]:
    """The form's `new-<name>` fields as whole numbers of at least their minimum; bad ones go to `errors`."""
    numbers = {}
    for name, minimum in minimums.items():
        raw = str(st.session_state.get(f"new-{name}", "")).strip()
        try:
            numbers[name] = int(float(raw))
            if numbers[name] < minimum or not float(raw).is_integer():
                raise ValueError
        except ValueError:
            errors[name] = f"{name} must be a whole number >= {minimum}, got {raw!r}"
    return numbers


def submit_new_run(env_name: str, algo: str) -> None:
    """Form callback: validate every field on its own, start the run only if all are valid. Every field's
    value is sent (the trainer keeps, as the run's overrides, those that differ from the preset)."""
    errors: dict[str, str] = {}
    overrides = read_hyperparameters(algo, env_name, errors)
    numbers = read_whole_numbers({"timesteps": 1, "seed": 0, "seeds": 1}, errors)
    st.session_state.form_errors = errors
    if errors:
        st.session_state.flash = ("error", f"Fix the {len(errors)} field(s) marked below; nothing was started.")
        return
    seeds = range(numbers["seed"], numbers["seed"] + numbers["seeds"])
    try:
        paths = [
            jobs.start_run(
                algo,
                env_name,
                timesteps=numbers["timesteps"],
                seed=seed,
                device=st.session_state.get("new-device", "auto"),
                overrides=overrides,
                preset=st.session_state.get("new-preset", DEFAULT_PRESET),
            )
            for seed in seeds
        ]
    except ValueError as err:
        st.session_state.flash = ("error", str(err))
        return
    st.session_state.current_run = paths[0].name
    st.session_state["train-run"] = paths[0].name  # the Training tab shows the (first) new run
    where = (
        f"in {paths[0]}"
        if len(paths) == 1
        else f"with seeds {seeds[0]}-{seeds[-1]} ({len(paths)} runs; compare them in **Compare**)"
    )
    st.session_state.flash = ("success", f"Started {algo} on {env_name} {where}. Follow it in **Training**.")


def field_error(name: str) -> None:
    message = st.session_state.get("form_errors", {}).get(name)
    if message:
        st.error(message, icon="⚠️")


def choose_env() -> tuple[str, str] | None:
    """The env picked in the New run form and its action kind, or None (with the reason shown)."""
    choices = [*ALIASES, OTHER_ENV]
    env_choice = st.selectbox(
        "Environment",
        choices,
        key="new-env",
        help="Thrust's four envs, or any gymnasium id with Box observations",
        on_change=reset_form_values,
    )
    env_name = (
        st.text_input("gymnasium id", "CartPole-v1", key="new-gym-id", on_change=reset_form_values)
        if env_choice == OTHER_ENV
        else env_choice
    )
    if ":" in env_name and not st.checkbox(
        f"Import the Python module {env_name.split(':')[0]!r} to register this env", key="new-allow-import"
    ):
        st.warning(
            "An id of the form module:Env imports that module (running its code) before making the env; "
            "tick the box above to allow it."
        )
        return None
    try:
        return env_name, action_kind(env_name)
    except ValueError as err:
        st.error(str(err))
        return None


def load_zoo_settings(algo: str, env_name: str, fields: set[str]) -> None:
    """Fill the form from an uploaded rl-baselines3-zoo hyperparameter file (its first entry)."""
    from thrust_app.training.run_spec import resolve_env_name
    from thrust_app.training.zoo_yaml import GYMNASIUM_TWINS, from_zoo_yaml

    uploaded = st.file_uploader("Load settings from an rl-zoo YAML file", type=["yml", "yaml"], key="zoo-upload")
    if uploaded is None or st.session_state.get("zoo-loaded") == uploaded.file_id:
        return
    try:
        env_id, timesteps, overrides = from_zoo_yaml(uploaded.getvalue().decode(), fields)
        apply_overrides(ALGOS[algo].Config(), overrides, algo)  # every value checked before any is shown
    except (ConfigError, UnicodeDecodeError) as err:
        st.error(f"{uploaded.name}: {err}")
        return
    resolved = resolve_env_name(env_name)
    if env_id not in (env_name, resolved, GYMNASIUM_TWINS.get(resolved)):
        st.warning(f"{uploaded.name} is for {env_id}; choose that environment (or its Thrust twin) first.")
        return
    for key, value in overrides.items():
        st.session_state[hp_key(algo, key)] = fmt_value(value)
    if timesteps is not None:
        st.session_state["new-timesteps"] = str(timesteps)
    st.session_state["zoo-loaded"] = uploaded.file_id
    st.success(f"Loaded {len(overrides)} settings from {uploaded.name}.")


def new_run_tab() -> None:
    chosen = choose_env()
    if chosen is None:
        return
    env_name, kind = chosen
    fitting = [name for name, cls in ALGOS.items() if (Discrete if kind == "discrete" else Box) in cls.supports]
    cols = st.columns(2)
    algo = cols[0].selectbox(
        "Algorithm",
        fitting,
        key="new-algo",
        help=f"only the algorithms that can act in this env's {kind} action space",
        on_change=reset_form_values,
    )
    cols[1].selectbox(
        "Device",
        ["auto", "cpu", "cuda"],
        key="new-device",
        help=f"this machine: {machine_devices()}; auto takes CUDA when present",
    )
    st.caption(f"This machine: {machine_devices()}")
    from thrust_app.training.run_spec import resolve_env_name

    st.selectbox(
        "Preset",
        preset_names(algo, resolve_env_name(env_name)),
        key="new-preset",
        help="where the settings start: the pair's tuned default, or a named one (fast: the quickest CartPole solve "
        "on one core; gpu: 4,096 envs on a GPU with CUDA graphs)",
        on_change=reset_typed_values,
    )
    preset = shown_preset(algo, env_name)
    config = apply_overrides(ALGOS[algo].Config(), preset.config)
    load_zoo_settings(algo, env_name, {f.name for f in dataclasses.fields(config)})
    new_run_form(env_name, algo, preset, config)


def new_run_form(env_name: str, algo: str, preset, config) -> None:
    """The form of a new run's budget, seeds and hyperparameters, filled from `preset` (its `config`)."""
    helps = field_help(type(config))
    with st.form("new-run"):
        timesteps_column, seed_column, seeds_column = st.columns(3)
        with timesteps_column:
            st.text_input("Timesteps", str(preset.timesteps), key="new-timesteps")
            field_error("timesteps")
        with seed_column:
            st.text_input("Seed", "0", key="new-seed")
            field_error("seed")
        with seeds_column:
            st.text_input("Seeds", "1", key="new-seeds", help="how many runs: seeds SEED, SEED+1, ... (each its own process)")
            field_error("seeds")
        st.markdown(f"**Hyperparameters** — preset: {preset.source}")
        columns = st.columns(3)
        for i, f in enumerate(dataclasses.fields(config)):
            with columns[i % 3]:
                st.text_input(f.name, fmt_value(getattr(config, f.name)), key=hp_key(algo, f.name), help=helps[f.name])
                field_error(f.name)
        st.form_submit_button("Start training", type="primary", on_click=submit_new_run, args=(env_name, algo))


# -- Training (live) ------------------------------------------------------------------------------
def curves(train: list[dict], evals: list[dict]) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    returns = pd.DataFrame(
        [{"step": r["step"], "return": r["return_mean"]} for r in train if r.get("return_mean") is not None]
    )
    ev = pd.DataFrame(
        [
            {
                "step": r["step"],
                "eval_mean": r["eval_mean"],
                "low": r["eval_mean"] - r["eval_std"],
                "high": r["eval_mean"] + r["eval_std"],
            }
            for r in evals
        ]
    )
    losses = pd.DataFrame(
        [
            {"step": r["step"], "wall_s": r.get("wall_s"), "loss": k, "value": v}
            for r in train
            for k, v in (r.get("losses") or {}).items()
        ]
    )
    return returns, ev, losses


def solved_step(info: jobs.RunInfo, evals: list[dict]) -> int | None:
    """The summary's solved step, or while training the first evaluation at the env's threshold."""
    if info.summary:
        return info.summary.get("solved_at_step")
    from thrust_app.training.run_spec import SOLVED_AT

    threshold = info.config.get("stop_at_return")
    threshold = SOLVED_AT.get(info.config.get("env")) if threshold is None else threshold
    return next((e["step"] for e in evals if threshold is not None and e["eval_mean"] >= threshold), None)


def return_chart(returns: pd.DataFrame, ev: pd.DataFrame) -> alt.Chart | None:
    layers = []
    if not returns.empty:
        layers.append(
            alt.Chart(returns)
            .mark_line(color="#9aa0a6")
            .encode(
                x=alt.X("step:Q", title="env steps"),
                y=alt.Y("return:Q", title="return"),
                tooltip=["step", alt.Tooltip("return:Q", format=".3g")],
            )
        )
    if not ev.empty:
        base = alt.Chart(ev).encode(x="step:Q")
        layers += [
            base.mark_area(opacity=0.2, color="#4285f4").encode(y="low:Q", y2="high:Q"),
            base.mark_line(point=True, color="#4285f4").encode(
                y="eval_mean:Q", tooltip=["step", alt.Tooltip("eval_mean:Q", format=".3g")]
            ),
        ]
    return alt.layer(*layers).properties(height=280) if layers else None


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


def live_panel(info_name: str) -> None:
    runs = {r.name: r for r in jobs.list_runs()}
    info = runs.get(info_name)
    if info is None:
        st.warning(f"{info_name} no longer exists.")
        return
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
        st.toast(f"Resuming {info.name}…")
    notes_form(info)
    panel_controls()
    live_panel(info.name)


# -- Runs -----------------------------------------------------------------------------------------
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

    name = st.selectbox("Settings of run, as rl-zoo YAML", [r.name for r in runs], key="yaml-run")
    info = next(r for r in runs if r.name == name)
    st.download_button("Download YAML", to_zoo_yaml(info.config), f"{name}.yml", "application/x-yaml", key="yaml")


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
                "solved_at_step": (r.summary or {}).get("solved_at_step"),
                "wall_s": (r.summary or {}).get("wall_s"),
                "seed": r.config.get("seed"),
            }
            for r in runs
        ]
    )
    search = st.text_input("Filter", key="runs-filter", placeholder="any part of a name, tag, algo, env or status")
    if search:
        table = table[table.astype(str).apply(lambda row: row.str.contains(search, case=False, regex=False)).any(axis=1)]
    st.dataframe(table, hide_index=True, width="stretch")
    st.download_button("Download as CSV", table.to_csv(index=False), "runs.csv", "text/csv", key="runs-csv")
    hyperparameter_view(runs)
    zoo_yaml_download(runs)
    delete_run_form(runs)


# -- Compare --------------------------------------------------------------------------------------
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


# -- Export & play --------------------------------------------------------------------------------
@st.fragment(run_every=2 * REFRESH_S)
def export_tab() -> None:
    runs = jobs.list_runs()
    done = [r for r in runs if not r.active and (r.path / LAST_CHECKPOINT).exists()]
    info = pick_run("Run to export", done, key="export-run") if done else None
    if info is None:
        if runs:
            st.info("Runs can be exported once they have stopped or finished.")
        return
    force = st.checkbox("Replace a different bundle of the same name", key="export-force")
    if st.button("Export to ONNX", key="export", type="primary"):
        from thrust_app.interop.exporter import export_run

        with st.spinner("Exporting and checking torch against onnxruntime…"):
            try:
                bundle = export_run(info.path, export_root() / info.name, force=force)
                st.session_state.exported = bundle.path.name
            except (BundleError, ValueError) as err:
                st.error(str(err))
    name = st.session_state.get("exported")
    target = export_root() / info.name
    if (target / "manifest.json").exists():
        from thrust_app.interop.bundle import load_bundle

        m = load_bundle(target).manifest
        par = m["parity"]
        cols = st.columns(4)
        cols[0].metric("max |torch - onnxruntime|", f"{par['max_abs_diff']:.2g}")
        cols[1].metric(
            "action agreement", f"{par['action_agreement']:.1%}" if "action_agreement" in par else "n/a (continuous)"
        )
        cols[2].metric("policy.onnx", f"{(target / 'policy.onnx').stat().st_size / 1024:.0f} KiB")
        cols[3].metric("ONNX IR / opset", f"{m['onnx']['ir_version']} / {m['onnx']['opset']}")
        st.caption(f"Bundle: {target} · checked on {par['observations']} observations at batch sizes {par['batch_sizes']}")
        server = player_server()
        st.link_button("▶ Play in browser", f"{server.url}?bundle={target.name}", type="primary")
    elif name:
        st.caption(f"Last export: {name}")


# -- Watch ----------------------------------------------------------------------------------------
def watch_tab(runs: list[jobs.RunInfo]) -> None:
    from thrust_app.dashboard.watch import record_episode, run_policy
    from thrust_app.envs.core import CORE_ENVS

    watchable = [r for r in runs if (r.path / LAST_CHECKPOINT).exists() and r.config.get("env") in CORE_ENVS]
    if not watchable:
        st.info("Train a policy on one of Thrust's envs to watch it here.")
        return
    info = pick_run("Policy", watchable, key="watch-run")
    seed = st.number_input("Episode seed", min_value=0, value=0, step=1, key="watch-seed")
    video_format = st.radio("Video", ["mp4", "webm"], horizontal=True, key="watch-format")
    if st.button("Render episode", key="watch"):
        with st.spinner("Playing and encoding…"):
            env_id, act = run_policy(info.path)
            recording = record_episode(act, env_id, int(seed), video_format)
            st.session_state.recording = (info.name, int(seed), recording)
    saved = st.session_state.get("recording")
    if saved and saved[0] == info.name:
        _, seed_used, rec = saved
        st.caption(
            f"seed {seed_used}: return {rec.episode_return:.3g} in {rec.steps} steps "
            f"(played and encoded in {rec.seconds:.1f} s)"
        )
        st.video(rec.video, format=rec.mime)
        extension = "mp4" if rec.mime == "video/mp4" else "webm"
        st.download_button(
            f"Save as {extension}", rec.video, f"{info.name}-seed{seed_used}.{extension}", rec.mime, key="watch-save"
        )


# -- Sweeps ---------------------------------------------------------------------------------------
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
        text = sweeps.seeds_yaml(algo, env, int(timesteps), int(seeds), {}, name)
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
    runs = [r for r in jobs.list_runs() if r.path.parent == info.path]
    if spec.search:
        hyperparameter_view(runs, key=f"hp-{info.name}")
    evaluated = [r.path for r in runs if r.summary and (r.path / METRICS_FILE).exists()]
    if spec.seeds > 1 and evaluated:
        st.markdown("**Over seeds** (each trial's runs as one group: IQM and mean with 95% bootstrap intervals)")
        table, pairs, _ = compare(evaluated, ["algo", "env", "config"], reps=2000)
        group_tables(table, pairs)
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
        status = "running" if info.running else "stopped"
        with st.expander(f"{info.name} — {status} — {counts}", expanded=info is found[0]):
            sweep_panel(info)


def sweeps_tab() -> None:
    """Launch a sweep (a search, or N seeds of one config), watch its trials live, stop and resume it; per
    sweep the trials, the best so far, its curves against the rest, the hyperparameter view and, with
    several seeds, IQM and bootstrap intervals per trial."""
    with st.expander("Launch a sweep", expanded=False):
        launch_sweep_form()
    sweep_list()


# -- page -----------------------------------------------------------------------------------------
def main() -> None:
    st.set_page_config(page_title="Thrust", page_icon="🚀", layout="wide")
    st.title("Thrust")
    st.caption(f"Runs in `{jobs.runs_root()}` · {machine_devices()}")
    flash = st.session_state.pop("flash", None)
    if flash:
        getattr(st, flash[0])(flash[1])
    runs = jobs.list_runs()
    tabs = st.tabs(["New run", "Training", "Runs", "Compare", "Sweeps", "Export & play", "Watch"])
    with tabs[0]:
        new_run_tab()
    with tabs[1]:
        training_tab()
    with tabs[2]:
        runs_tab()
    with tabs[3]:
        compare_tab()
    with tabs[4]:
        sweeps_tab()
    with tabs[5]:
        export_tab()
    with tabs[6]:
        watch_tab(runs)


main()
