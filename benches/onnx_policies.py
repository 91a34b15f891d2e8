"""Exported-policy latency and throughput on every runtime, for every bundle in export/.

Runtimes: torch eager (the network rebuilt from the bundle's own weights), onnxruntime CPU EP,
onnxruntime CUDA EP (when onnxruntime offers it), onnxruntime-web wasm and onnxruntime-web WebGPU
(headless Debian Chromium through the player's `thrustPlayer.benchmark` hook; WebGPU here is
SwiftShader, a software adapter, so read its numbers as "works", not "fast").

    python benches/onnx_policies.py [--quick] [--json PATH] [--no-browser]

Per bundle and runtime: median per-call latency at batch 1, observations/s at batch 256, and for the
browser rows the player's frame rate ceiling: steps/s of a whole episode loop (Python env step in
Pyodide + inference), drawing excluded.
The Python runtimes alternate round by round (harness.py); the browser ones run after them.

A first visit per bundle (each env family's time to first frame): a new Chromium (empty cache) opens
`?bundle=NAME&ep=wasm`; reported are the milliseconds from navigation to the bundle's first drawn frame,
Pyodide's start-up within them, what the page fetched until then (bytes and npm packages, from the
Resource Timing entries) and the size of a static site holding only that bundle (`thrust web build`).
"""

from __future__ import annotations

import argparse
import json
import platform
import sys
from pathlib import Path

import numpy as np
import onnxruntime as ort
import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
from harness import fmt_seconds, run_rounds

from thrust_app.interop.bundle import OnnxPolicy, load_bundle
from thrust_app.interop.exporter import torch_policy_from_bundle
from thrust_app.web.browser import BrowserUnavailable, player_page
from thrust_app.web.server import REFERENCE_DIR, PlayerServer

LARGE = 256


def python_runtimes(bundle, rng):
    """name -> factory(batch) -> callable, for the runtimes in this process."""
    graph = torch_policy_from_bundle(bundle)
    cpu = OnnxPolicy(bundle)
    runtimes = {"torch eager": lambda obs: _torch_call(graph, obs), "onnxruntime cpu": cpu.run}
    if "CUDAExecutionProvider" in ort.get_available_providers():
        runtimes["onnxruntime cuda"] = OnnxPolicy(bundle, ["CUDAExecutionProvider"]).run
    check = observations(bundle, rng, 8)
    want = _torch_call(graph, check)
    got = cpu.run(check)[bundle.action_output]
    assert np.allclose(np.asarray(want, dtype=np.float64), got.astype(np.float64), atol=1e-4), "torch rebuild differs"
    return runtimes


def observations(bundle, rng, n: int) -> np.ndarray:
    """`n` observations for `bundle`: N(0, 1) vectors, or a Dict observation's valid parts flattened."""
    import gymnasium as gym

    from thrust_app.envs import env_parted_space

    space = env_parted_space(bundle.env_id) if bundle.manifest["observation"].get("parts") else None
    if space is None:
        return rng.normal(size=(n, *bundle.manifest["observation"]["shape"])).astype(np.float32)
    space.seed(int(rng.integers(2**31)))
    return np.stack([gym.spaces.flatten(space, space.sample()) for _ in range(n)]).astype(np.float32)


def _torch_call(graph, obs):
    with torch.no_grad():
        memory = [torch.zeros(len(obs), graph.policy.state_size)] if graph.recurrent else []  # zeros: an episode's start
        out = graph(torch.from_numpy(obs), *memory)
    return (out[1] if isinstance(out, tuple) and graph.discrete else out[0] if isinstance(out, tuple) else out).numpy()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--json", type=Path)
    parser.add_argument("--no-browser", action="store_true", help="skip the onnxruntime-web columns")
    parser.add_argument("--export-dir", type=Path, default=REFERENCE_DIR)
    args = parser.parse_args()
    torch.set_num_threads(1)
    rounds, min_time = (3, 0.1) if args.quick else (5, 0.5)
    seconds = 0.3 if args.quick else 1.5
    rng = np.random.default_rng(0)
    bundles = [load_bundle(p) for p in sorted(args.export_dir.iterdir()) if (p / "manifest.json").is_file()]
    rows = []
    for bundle in bundles:
        benches, units = {}, {}
        for name, call in python_runtimes(bundle, rng).items():
            for batch in (1, LARGE):
                obs = observations(bundle, rng, batch)
                benches[f"{name}|{batch}"] = lambda call=call, obs=obs: call(obs)
                units[f"{name}|{batch}"] = batch
        for key, m in run_rounds(benches, rounds, min_time, min_time / 2, units=units).items():
            name, batch = key.split("|")
            rows.append(
                {
                    "bundle": bundle.path.name,
                    "runtime": name,
                    "batch": int(batch),
                    "median_s": m.median,
                    "min_s": m.spread[0],
                    "max_s": m.spread[1],
                    "obs_per_s": m.rate,
                }
            )
    visits = []
    if not args.no_browser:
        try:
            rows += browser_rows(bundles, args.export_dir, seconds)
            visits = first_visits(bundles, args.export_dir)
        except BrowserUnavailable as err:
            print(f"onnxruntime-web columns skipped: {err}")
    print_table(rows)
    print_visits(visits)
    if args.json:
        host = {
            "machine": platform.machine(),
            "python": platform.python_version(),
            "torch": torch.__version__,
            "onnxruntime": ort.__version__,
            "providers": ort.get_available_providers(),
        }
        args.json.write_text(json.dumps({"host": host, "quick": args.quick, "rows": rows, "first_visits": visits}, indent=2))
        print(f"wrote {args.json}")


def browser_rows(bundles, export_dir: Path, seconds: float) -> list[dict]:
    rows = []
    with PlayerServer(port=0, export_dir=export_dir) as server, player_page(server.url) as page:
        for bundle in bundles:
            for ep in ("wasm", "webgpu"):
                episode = page.evaluate(
                    "(a) => window.thrustPlayer.runEpisode(a)",
                    {"bundle": bundle.path.name, "ep": ep, "seed": 0, "maxSteps": 300},
                )
                for batch in (1, LARGE):
                    r = page.evaluate(
                        "(a) => window.thrustPlayer.benchmark(a)",
                        {"bundle": bundle.path.name, "ep": ep, "batch": batch, "seconds": seconds},
                    )
                    rows.append(
                        {
                            "bundle": bundle.path.name,
                            "runtime": f"onnxruntime-web {ep}",
                            "batch": batch,
                            "median_s": r["medianMs"] / 1000,
                            "min_s": r["minMs"] / 1000,
                            "max_s": r["maxMs"] / 1000,
                            "obs_per_s": batch / (r["medianMs"] / 1000),
                            "player_steps_per_s": episode["stepsPerSecond"],
                        }
                    )
    return rows


#: The bytes and npm packages a page fetched up to its first frame, from its Resource Timing entries.
FETCHED_BEFORE_FIRST_FRAME = """() => {
  const until = window.thrustPlayer.timings.firstFrameMs;
  const entries = [...performance.getEntriesByType("navigation"), ...performance.getEntriesByType("resource")]
    .filter((e) => e.responseEnd <= until);
  const packages = entries.map((e) => new URL(e.name).pathname.match(/node_modules\\/((@[^/]+\\/)?[^/]+)/)?.[1]);
  return {
    bytes: entries.reduce((n, e) => n + e.decodedBodySize, 0),
    packages: [...new Set(packages.filter(Boolean))].sort(),
  };
}"""


def first_visits(bundles, export_dir: Path) -> list[dict]:
    """Per bundle, a first visit to `?bundle=NAME&ep=wasm` in a new browser: time to its first frame,
    what was fetched until then, and the size of a static site holding only that bundle."""
    from tempfile import TemporaryDirectory

    from thrust_app.web.site import build_site

    visits = []
    with PlayerServer(port=0, export_dir=export_dir) as server:
        for bundle in bundles:
            with player_page(server.url, f"?bundle={bundle.path.name}&ep=wasm") as page:
                page.wait_for_function("window.thrustPlayer.timings.firstFrameMs !== null", timeout=180_000)
                timings = page.evaluate("window.thrustPlayer.timings")
                fetched = page.evaluate(FETCHED_BEFORE_FIRST_FRAME)
            with TemporaryDirectory() as tmp:
                site = build_site(Path(tmp) / "site", [str(bundle.path)], log=lambda _: None)
            visits.append(
                {
                    "bundle": bundle.path.name,
                    "env_id": bundle.env_id,
                    "first_frame_ms": timings["firstFrameMs"],
                    "pyodide_startup_ms": timings["pyodideStartupMs"],
                    "fetched_bytes": fetched["bytes"],
                    "fetched_packages": fetched["packages"],
                    "site_bytes": site["bytes"],
                }
            )
    return visits


def print_visits(visits: list[dict]) -> None:
    if not visits:
        return
    print(
        f"\n{'bundle':30s} {'env':26s} {'first frame':>12s} {'Pyodide':>9s} {'fetched':>9s} {'site':>9s}  npm packages fetched"
    )
    for v in visits:
        print(
            f"{v['bundle']:30s} {v['env_id']:26s} {v['first_frame_ms'] / 1000:>10.2f} s "
            f"{v['pyodide_startup_ms'] / 1000:>7.2f} s "
            f"{v['fetched_bytes'] / 2**20:>5.1f} MiB {v['site_bytes'] / 2**20:>5.1f} MiB  {', '.join(v['fetched_packages'])}"
        )


def print_table(rows: list[dict]) -> None:
    print(f"{'bundle':16s} {'runtime':22s} {'batch-1 latency':>16s} {'batch-256 obs/s':>16s} {'player steps/s':>15s}")
    keys = list(dict.fromkeys((r["bundle"], r["runtime"]) for r in rows))
    for bundle, runtime in keys:
        one = next(r for r in rows if (r["bundle"], r["runtime"], r["batch"]) == (bundle, runtime, 1))
        big = next(r for r in rows if (r["bundle"], r["runtime"], r["batch"]) == (bundle, runtime, LARGE))
        player = f"{one['player_steps_per_s']:,.0f}" if "player_steps_per_s" in one else "—"
        print(f"{bundle:16s} {runtime:22s} {fmt_seconds(one['median_s']):>16s} {big['obs_per_s']:>16,.0f} {player:>15s}")


if __name__ == "__main__":
    main()
