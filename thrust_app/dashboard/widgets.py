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
    """A run chosen in a select box, kept by its name: the one last chosen here (or started, or resumed), else the
    current run, else the newest. The list is newest first, so starting or resuming a run reorders it; the
    browser keeps a choice by its place in the list, so the name is written into the box's state on every
    rerun (a resumed run's box jumped to the run that took its place)."""
    if not runs:
        st.info("No runs yet: start one in **New run**.")
        return None
    names = [r.name for r in runs]
    chosen = st.session_state.get(chosen_key(key), st.session_state.get("current_run"))
    st.session_state[key] = chosen if chosen in names else names[0]
    name = st.selectbox(
        label, names, key=key, format_func=lambda n: run_label(runs[names.index(n)]), on_change=remember_choice, args=(key,)
    )
    st.session_state[chosen_key(key)] = st.session_state.current_run = name
    return runs[names.index(name)]


def chosen_key(key: str) -> str:
    return f"{key}-chosen"


def remember_choice(key: str) -> None:
    """The user picked another run in the box `key`: that one stays chosen."""
    st.session_state[chosen_key(key)] = st.session_state[key]
