"""The Watch tab: an episode of a trained policy as a video."""

from __future__ import annotations

import streamlit as st

from thrust_app.dashboard import jobs
from thrust_app.dashboard.widgets import pick_run
from thrust_app.runs.files import LAST_CHECKPOINT


def watch_tab(runs: list[jobs.RunInfo]) -> None:
    from thrust_app.envs.core import CORE_ENVS
    from thrust_app.interop.video import record_episode, run_policy

    watchable = [r for r in runs if (r.path / LAST_CHECKPOINT).exists() and r.config.get("env") in CORE_ENVS]
    if not watchable:
        st.info("Train a policy on one of Thrust's envs to watch it here.")
        return
    info = pick_run("Policy", watchable, key="watch-run")
    seed = st.number_input("Episode seed", min_value=0, value=0, step=1, key="watch-seed")
    video_format = st.radio("Video", ["mp4", "webm"], horizontal=True, key="watch-format")
    if st.button("Render episode", key="watch"):
        with st.spinner("Playing and encoding…"):
            env_id, act, pipeline = run_policy(info.path)
            recording = record_episode(act, env_id, int(seed), video_format, pipeline=pipeline)
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
