"""What every tab of the dashboard shares: the machine's devices, the env's action kind, the player's
server, value formatting and the run picker."""

from __future__ import annotations

import os
from pathlib import Path

import streamlit as st

from thrust_app.dashboard import jobs

REFRESH_S = 2.0


@st.cache_data(show_spinner=False)
def action_kind(env_name: str) -> type:
    """The kind of an env's action space (Discrete, Box or MultiDiscrete: what `Algorithm.supports` lists; a
    ValueError with the reason if it cannot be trained)."""
    from thrust_app.envs import env_spaces

    _, action_space = env_spaces(env_name)
    return type(action_space)


@st.cache_data(show_spinner=False)
def machine_devices() -> str:
    from thrust_app.training.device import cuda_summary

    return cuda_summary()


def export_root() -> Path:
    """Where the dashboard exports to: the same folder as `thrust export` (bundle.export_dir())."""
    from thrust_app.interop.bundle import export_dir

    return export_dir()


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
