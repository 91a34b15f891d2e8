"""Thrust's training dashboard (Streamlit). Start it with `thrust app` (or `make run`).

The page and its tabs, one module each: New run (`new_run_tab.py`: env, algorithm, device, preset and
hyperparameters), Training (`training_tab.py`: live progress and charts of the selected run, Stop and
Resume), Runs (`runs_tab.py`: overview, the settings' effects, delete), Compare (`compare_tab.py`: groups
of seeds with IQM, bootstrap intervals and probability of improvement), Sweeps (`sweeps_tab.py`: launch,
watch, stop and resume `thrust sweep`), Export & play (`export_tab.py`: ONNX bundle, parity figures, a
link to the browser player), Watch (`watch_tab.py`: an episode of a trained policy as a video). Training
happens in `thrust train` processes (jobs.py), so nothing here can kill or corrupt a run.
"""

from __future__ import annotations

import streamlit as st

from thrust_app.dashboard import jobs
from thrust_app.dashboard.compare_tab import compare_tab
from thrust_app.dashboard.export_tab import export_tab
from thrust_app.dashboard.new_run_tab import new_run_tab
from thrust_app.dashboard.runs_tab import runs_tab
from thrust_app.dashboard.sweeps_tab import sweeps_tab
from thrust_app.dashboard.training_tab import training_tab
from thrust_app.dashboard.watch_tab import watch_tab
from thrust_app.dashboard.widgets import machine_devices


def main() -> None:
    st.set_page_config(page_title="Thrust", page_icon="🚀", layout="wide")
    st.title("Thrust")
    st.caption(f"Runs in `{jobs.runs_root()}` · {machine_devices()}")
    # The flash message's slot is always there: a message appearing above the tabs would move them, and the
    # browser then shows the first tab again (Launch on Sweeps sent the page back to New run).
    flash, slot = st.session_state.pop("flash", None), st.container()
    if flash:
        getattr(slot, flash[0])(flash[1])
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
