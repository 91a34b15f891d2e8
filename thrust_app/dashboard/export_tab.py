"""The Export & play tab: a run's ONNX bundle, its parity figures, and a link to the browser player."""

from __future__ import annotations

import streamlit as st

from thrust_app.dashboard import jobs
from thrust_app.dashboard.widgets import REFRESH_S, export_root, pick_run, player_server
from thrust_app.interop.bundle import BundleError
from thrust_app.runs.files import LAST_CHECKPOINT


@st.fragment(run_every=2 * REFRESH_S)
def export_tab() -> None:
    runs = jobs.list_runs()
    done = [r for r in runs if not r.active and (r.path / LAST_CHECKPOINT).exists()]
    info = pick_run("Run to export", done, key="export-run") if done else None
    if info is None:
        st.info(
            "Runs can be exported once they have stopped or finished."
            if runs
            else "Nothing to export yet: train a run in **New run**; once it stops or finishes, export its ONNX "
            "bundle here and play it in the browser."
        )
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
