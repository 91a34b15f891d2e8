"""Training in the browser tab: seconds to solve an env (CartPole by default) with the player's Train mode, per backend.

Real headless Debian Chromium on `thrust web`'s server (cross-origin isolated), driven through
`thrustPlayer.trainInBrowser`. For each backend and seed: wall seconds from the first rollout to the
evaluation that reached 475 (evaluations included, Python/tfjs start-up excluded), env steps, steps/s and the
median minibatch update. While each run trains, the page's main thread is sampled every 100 ms for how
long a queued task waits (what a click would wait): the page must stay responsive. The wait while the
result is built into a bundle and loaded into onnxruntime-web (the first time: its wasm compiles) is
reported apart.

    python benches/browser_training.py [--env cartpole] [--backends wasm,cpu,webgpu] [--seeds 5]
                                       [--preset fast] [--max-seconds 120] [--json PATH]

e.g. `--env acrobot --preset default` (the zoo's preset, observations and rewards normalised in the tab).

A backend whose run hits --max-seconds reports its steps/s and update time, unsolved; WebGPU here is
SwiftShader (a software adapter), so its row says "works", not "fast".
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys

from thrust_app.web.browser import player_page
from thrust_app.web.server import PlayerServer

#: Samples the main thread's task latency until stopped: setTimeout(0) lag every 100 ms.
WATCH_MAIN_THREAD = """() => {
  window.__lags = [];
  window.__watching = true;
  const tick = () => {
    if (!window.__watching) return;
    const asked = performance.now();
    setTimeout(() => { window.__lags.push([asked, performance.now() - asked]); setTimeout(tick, 100); }, 0);
  };
  tick();
}"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--env", default="cartpole", help="an env the Train mode offers (py/training.json)")
    parser.add_argument("--backends", default="wasm,cpu", help="comma-separated: wasm, cpu, webgpu")
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--preset", default="fast")
    parser.add_argument("--max-seconds", type=float, default=120.0)
    parser.add_argument("--json", help="write the rows here")
    args = parser.parse_args()
    rows = []
    with PlayerServer(port=0) as server, player_page(server.url, "?mode=train") as page:
        for backend in args.backends.split(","):
            for seed in range(args.seeds):
                page.evaluate(WATCH_MAIN_THREAD)
                request = {
                    "env": args.env,
                    "preset": args.preset,
                    "seed": seed,
                    "backend": backend,
                    "maxSeconds": args.max_seconds,
                }
                result = page.evaluate("r => window.thrustPlayer.trainInBrowser(r)", request)
                samples = page.evaluate("() => { window.__watching = false; return window.__lags; }")
                # while the worker trained; then once: the bundle is built and onnxruntime-web loads it to play
                lags = [lag for asked, lag in samples if asked < result["receivedAt"]]
                after = [lag for asked, lag in samples if asked >= result["receivedAt"]] or [0.0]
                row = {
                    "backend": result["backendDetail"],
                    "seed": seed,
                    "solved": result["solved"],
                    "seconds": result["seconds"],
                    "eval_seconds": result["evalSeconds"],
                    "steps": result["steps"],
                    "eval_mean": result["evalMean"],
                    "steps_per_s": result["stepsPerSecond"],
                    "update_ms": result["updateMs"],
                    "main_thread_lag_max_ms": max(lags),
                    "main_thread_lag_p99_ms": statistics.quantiles(lags, n=100)[98] if len(lags) > 2 else max(lags),
                    "lag_loading_result_ms": max(after),
                }
                rows.append(row)
                print(
                    f"{row['backend']:>18} seed {seed}: {'solved' if row['solved'] else 'NOT solved'} in "
                    f"{row['seconds']:.1f} s ({row['eval_seconds']:.1f} s evaluating), {row['steps']:,} steps, "
                    f"last eval {row['eval_mean']}, "
                    f"{row['steps_per_s']:,.0f} steps/s, update {row['update_ms']:.1f} ms, "
                    f"main-thread lag max {row['main_thread_lag_max_ms']:.0f} ms (loading the result: "
                    f"{row['lag_loading_result_ms']:.0f} ms)",
                    flush=True,
                )
    print(f"\n{args.env}, preset {args.preset}:")
    columns = "backend, seeds solved, median s to solve, max s, median steps, median last eval, steps/s, update ms, max lag ms"
    print("| " + " | ".join(columns.split(", ")) + " |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    for backend in dict.fromkeys(row["backend"] for row in rows):
        mine = [row for row in rows if row["backend"] == backend]
        solved = [row for row in mine if row["solved"]]
        seconds = [row["seconds"] for row in solved] or [float("nan")]
        print(
            f"| {backend} | {len(solved)}/{len(mine)} | {statistics.median(seconds):.1f} | {max(seconds):.1f} | "
            f"{statistics.median(row['steps'] for row in mine):,.0f} | "
            f"{statistics.median(row['eval_mean'] for row in mine if row['eval_mean'] is not None):.1f} | "
            f"{statistics.median(row['steps_per_s'] for row in mine):,.0f} | "
            f"{statistics.median(row['update_ms'] for row in mine):.1f} | "
            f"{max(row['main_thread_lag_max_ms'] for row in mine):.0f} |"
        )
    if args.json:
        with open(args.json, "w") as out:
            json.dump(rows, out, indent=1)


if __name__ == "__main__":
    sys.exit(main())
