"""The `thrust` command line: one sub-command per job, each a thin layer over the Python API."""

from __future__ import annotations

import argparse
import errno
import importlib.util
import os
import signal
import sys
import traceback
from collections.abc import Sequence
from pathlib import Path


def _cmd_demo(args: argparse.Namespace) -> int:
    from .envs.demo import run_demo

    run_demo(seed=args.seed)
    return 0


def _cmd_envs(args: argparse.Namespace) -> int:
    from .envs.core import ALIASES, LOCOMOTION_TASKS, make_core

    alias_width, id_width = max(map(len, ALIASES)), max(map(len, ALIASES.values()))
    for alias, env_id in ALIASES.items():
        env = make_core(env_id)
        space = env.action_space
        actions = f"Discrete({space.n})" if hasattr(space, "n") else f"Box{space.shape} in [{space.low}, {space.high}]"
        print(
            f"{alias:{alias_width}s} {env_id:{id_width}s} obs {env.observation_space.shape}  actions {actions}  "
            f"limit {env.max_episode_steps or '-'}"
        )
    print("\nAny gymnasium id trains too; these families have presets (docs/training.md):")
    for family, example, module, extra in FAMILIES:
        here = "installed" if importlib.util.find_spec(module) else f'not installed: pip install "thrust_app[{extra}]"'
        print(f"  {family:9s} e.g. {example:22s} ({here})")
    print("  memory    the zoo's velocity-free envs, e.g. CartPoleNoVel-v1, PendulumNoVel-v1 (recurrent_ppo presets)")
    robots = ", ".join(LOCOMOTION_TASKS)
    print(f"\nThe browser player (thrust web) plays every env above and MinAtar's v1 games; of MuJoCo's, {robots}.")
    return 0


#: The env families with presets, an id of each, the package that brings them and the extra that installs it.
FAMILIES = (
    ("Atari", "ALE/Breakout-v5", "ale_py", "atari"),
    ("MinAtar", "MinAtar/Breakout-v1", "minatar", "minatar"),
    ("MuJoCo", "HalfCheetah-v5", "mujoco", "mujoco"),
)


def _cmd_train(args: argparse.Namespace) -> int:
    """Train or resume through the model object (thrust_app/api/model.py), as a Python user does."""
    from .algos import get_algo
    from .api.model import MODELS, Model

    if args.seeds is not None:
        return _train_seeds(args)
    if args.resume:
        if args.algo or args.env:
            raise UsageError("--resume continues a run as it was configured; give no ALGO or ENV with it")
        device = args.device if args.device != "auto" else None
        model = Model.resume_run(args.resume, timesteps=args.timesteps, device=device, progress_bar=not args.quiet)
    else:
        if not (args.algo and args.env):
            raise UsageError("thrust train needs ALGO and ENV (e.g. `thrust train ppo cartpole`), or --resume RUN_DIR")
        model = MODELS[get_algo(args.algo).name](
            args.env,
            seed=args.seed,
            device=args.device,
            run_dir=args.run_dir,
            eval_every=args.eval_every,
            eval_episodes=args.eval_episodes,
            stop_at_return=args.stop_at_return,
            overrides=args.set,
            env_backend=args.env_backend,
            tensorboard=args.tensorboard,
            preset=args.preset,
        )
        model.learn(args.timesteps, progress_bar=not args.quiet)
    summary = model.summary
    _print_summary(summary)
    run_dir = summary["run_dir"]
    if summary["status"] in ("interrupted", "terminated"):
        print(
            f"thrust: {summary['status']}; checkpoint kept, continue with `thrust train --resume {run_dir}`", file=sys.stderr
        )
        return 130 if summary["status"] == "interrupted" else 143
    if summary["status"] == "diverged":
        print(
            f"thrust: error: training diverged at step {summary['diverged_at_step']:,}: a loss or weight became NaN "
            f"or infinite; {run_dir}/last.pt keeps the last finite checkpoint (if one was written). Lower "
            "learning_rate or max_grad_norm and train again.",
            file=sys.stderr,
        )
        return 3
    return 0


def _train_seeds(args: argparse.Namespace) -> int:
    """`thrust train ALGO ENV --seeds 0-31`: the seeds as one batch in this process (training/seed_batch.py)."""
    from .training.seed_batch import parse_seeds, train_seeds

    if args.resume or args.run_dir:
        raise UsageError("--seeds makes a run folder per seed under --runs-root; give no --resume or --run-dir with it")
    if not (args.algo and args.env):
        raise UsageError("thrust train --seeds needs ALGO and ENV (e.g. `thrust train ppo CartPole-v1 --seeds 0-31`)")
    summaries = train_seeds(
        args.algo,
        args.env,
        parse_seeds(args.seeds),
        timesteps=args.timesteps,
        device=args.device if args.device != "auto" else "cpu",
        runs_root=args.runs_root,
        eval_every=args.eval_every,
        eval_episodes=args.eval_episodes,
        stop_at_return=args.stop_at_return,
        overrides=args.set,
        torch_threads=args.torch_threads,
        env_backend=args.env_backend,
        tensorboard=args.tensorboard,
        preset=args.preset,
        progress=not args.quiet,
    )
    for summary in summaries:
        print(f"seed {summary['seed']}: ", end="")
        _print_summary(summary)
    folders = " ".join(sorted({str(Path(s["run_dir"]).parent) for s in summaries}))
    print(f"thrust: compare the seeds with `thrust compare {folders}`")
    statuses = {summary["status"] for summary in summaries}
    return 130 if "interrupted" in statuses else 143 if "terminated" in statuses else 3 if "diverged" in statuses else 0


def _print_summary(summary: dict) -> None:
    solved = "not solved"
    if summary.get("solved_at_step") is not None:
        solved = f"solved at step {summary['solved_at_step']:,} ({summary['solved_at_s']:.1f} s"
        if summary.get("solved_at_train_s") is not None:  # absent in runs resumed from older checkpoints
            solved += f", {summary['solved_at_train_s']:.1f} s of it training, evaluations apart"
        solved += ")"
    ev = summary.get("eval_mean")
    ev_text = f"eval {ev:.3f} +- {summary['eval_std']:.3f}" if ev is not None else "no eval"
    if summary.get("eval_success_rate") is not None:  # a goal env's share of episodes reaching the goal
        ev_text += f", success rate {summary['eval_success_rate']:.2f}"
    print(
        f"{summary['algo']} {summary['env']}: {summary['status']} after {summary['timesteps']:,} steps in "
        f"{summary['wall_s']:.1f} s ({summary['sps']:,.0f} steps/s on {summary['device']}); {ev_text}; {solved}"
    )


def _cmd_eval(args: argparse.Namespace) -> int:
    from pathlib import Path

    from .interop.bundle import MANIFEST_FILE, check_bundle_fits_env, load_bundle
    from .training.evaluation import evaluate

    path = Path(args.path)
    if (path.is_dir() and (path / "policy.onnx").is_file() and not (path / MANIFEST_FILE).is_file()) or (
        path.suffix == ".onnx" and not (path.parent / MANIFEST_FILE).is_file()
    ):
        raise UsageError(
            f"{path} is an ONNX file without a Thrust manifest; a bundle is policy.onnx plus "
            "manifest.json (see docs/export.md), or evaluate a run folder"
        )
    is_bundle = (path / MANIFEST_FILE).is_file() or path.name in ("policy.onnx", MANIFEST_FILE)
    runtime = args.runtime or ("onnxruntime" if is_bundle else "torch")
    if runtime == "onnxruntime":
        if not is_bundle:
            raise UsageError(
                f"{path} is not a bundle; export the run first (`thrust export {path}`) or evaluate it with --runtime torch"
            )
        from .interop.bundle import OnnxPolicy

        bundle = load_bundle(path)
        check_bundle_fits_env(bundle)
        act = OnnxPolicy(bundle)
        env_id, pipeline = bundle.env_id, bundle.pipeline
        label = f"{bundle.manifest['algo']} bundle"
    else:
        run = Path(load_bundle(path).manifest["source_run"]) if is_bundle else path
        if is_bundle and not run.is_dir():
            raise UsageError(f"the bundle's source run {run} is not here; evaluate the bundle with --runtime onnxruntime")
        act, env_id, pipeline, label = _torch_policy(run, args.device)
    result = evaluate(act, env_id, args.episodes, args.seed, pipeline=pipeline)
    print(
        f"{label} on {env_id} ({runtime}): mean return {result.mean:.3f} +- {result.std:.3f} over "
        f"{args.episodes} episodes (seeds {args.seed}..{args.seed + args.episodes - 1})"
    )
    print("returns:", " ".join(f"{r:.6g}" for r in result.returns))
    if result.success_rate is not None:
        print(f"success rate: {result.success_rate:.2f} (the env's is_success at each episode's end)")
    return 0


def _torch_policy(run, device: str):
    from .algos.base import NumpyPolicy
    from .envs.pipeline import Pipeline
    from .training.trainer import load_policy

    spec, policy = load_policy(run, device)
    return NumpyPolicy(policy), spec.env, Pipeline.of(spec.config), f"{spec.algo} run"


def _cmd_export(args: argparse.Namespace) -> int:
    from .interop.exporter import export_run

    bundle = export_run(args.run_dir, args.out, force=args.force)
    parity = bundle.manifest["parity"]
    agreement = f", actions agree {parity['action_agreement']:.1%}" if "action_agreement" in parity else ""
    print(
        f"exported {bundle.manifest['algo']} on {bundle.env_id} to {bundle.path} "
        f"({bundle.model_path.stat().st_size / 1024:.0f} KiB, IR {bundle.manifest['onnx']['ir_version']}, "
        f"opset {bundle.manifest['onnx']['opset']}); torch vs onnxruntime: max |diff| {parity['max_abs_diff']:.2g}"
        f"{agreement}"
    )
    return 0


def _cmd_import(args: argparse.Namespace) -> int:
    from .api.share import SHARE_MARKER, import_share
    from .interop.bundle import export_dir
    from .interop.importer import import_onnx, import_sb3

    if (Path(args.source) / SHARE_MARKER).is_file():
        out = args.out or export_dir() / Path(args.source).resolve().name
        bundle = import_share(args.source, out, force=args.force)
        print(f"imported the shared {bundle.manifest['algo']} model for {bundle.env_id} from {args.source} to {bundle.path}")
        return 0
    if not args.env:
        raise UsageError("thrust import needs --env ENV for an SB3 zip or an ONNX file (the env it was trained on)")
    if args.source.lower().endswith(".onnx"):
        bundle = import_onnx(
            args.source, args.env, args.out, action_output=args.action_output, post=args.post, force=args.force
        )
        parity = bundle.manifest["parity"]
        print(
            f"imported {args.source} for {bundle.env_id} to {bundle.path}\nparity: {parity['source_model']} "
            f"on {parity['observations']} observations (max |diff| {parity['max_abs_diff']:.2g})"
        )
        return 0
    bundle = import_sb3(
        args.source, args.env, args.out, vec_normalize=args.vec_normalize, trust_pickle=args.trust_pickle, force=args.force
    )
    source, parity = bundle.manifest["source"], bundle.manifest["parity"]
    agreement = f", actions agree {parity['action_agreement']:.1%}" if "action_agreement" in parity else ""
    twin = f" (Thrust's twin of {source['trained_on']}, the same dynamics)" if source["trained_on"] != bundle.env_id else ""
    folded = f"; VecNormalize statistics folded in from {source['vec_normalize']}" if source["vec_normalize"] else ""
    print(
        f"imported SB3 {source['library_version']} {source['algo'].upper()} ({source['activation']}, "
        f"{source['postprocessing']}) for {bundle.env_id}{twin} to {bundle.path}{folded}\n"
        f"parity: rebuilt torch policy vs onnxruntime max |diff| {parity['max_abs_diff']:.2g}{agreement}; "
        f"{parity['stable_baselines3']}"
    )
    return 0


def _cmd_share(args: argparse.Namespace) -> int:
    from .api.share import share_run

    out = share_run(args.run_dir, args.out, episodes=args.episodes, force=args.force)
    files = ", ".join(sorted(p.name + ("/" if p.is_dir() else "") for p in out.iterdir()))
    print(f"thrust: shared {args.run_dir} as {out}: {files}")
    print(f"thrust: publish with `huggingface-cli upload USER/REPO {out}` (or huggingface_hub.upload_folder)")
    return 0


def _cmd_compare(args: argparse.Namespace) -> int:
    from .runs.compare import DEFAULT_GROUP_BY, compare, format_table, load_groups

    group_by = tuple(args.group_by.split(",")) if args.group_by else DEFAULT_GROUP_BY
    table, pairs, skipped = compare(args.runs, group_by, args.reps, args.score, args.threshold)
    if not table:
        raise UsageError("no evaluated runs among those given; train some first (`thrust train ...`)")
    print(format_table(table, pairs, args.score))
    if skipped:
        print(f"({len(skipped)} run(s) without an evaluation left out: {', '.join(p.name for p in skipped)})")
    if args.plot:
        from .runs.compare_plot import plot_comparison

        groups, _ = load_groups(args.runs, group_by, args.threshold)
        print(f"thrust: figure written to {plot_comparison(groups, table, args.score, args.plot, args.x)}")
    return 0


def _cmd_sweep(args: argparse.Namespace) -> int:

    from .runs.compare import compare, format_table
    from .sweeps.launch import sweep
    from .sweeps.trials import best_trial, trial_states

    if bool(args.file) == bool(args.resume):
        raise UsageError("thrust sweep needs a sweep file (thrust sweep SWEEP.yaml) or --resume runs/<sweep>")
    folder = sweep(
        args.file,
        resume_folder=args.resume,
        runs_root=args.runs_root,
        workers=args.workers,
        engine=args.engine,
        address=args.address,
    )
    states = ", ".join(f"{count} {state}" for state, count in trial_states(folder).items())
    print(f"thrust: trials: {states}")
    best = best_trial(folder)
    if best:
        print(f"thrust: best trial {best['trial']}: score {best['score']:.4g} with {best['params']}")
        table, pairs, _ = compare([folder], reps=1000)
        pairs = {pair: value for pair, value in pairs.items() if len(table) <= 4}  # a few groups: all pairs
        print(format_table(table, pairs))
    return 0


def _cmd_tb_export(args: argparse.Namespace) -> int:
    from .runs.compare import find_runs
    from .runs.tensorboard import export_run

    for run in find_runs(args.runs):
        print(f"thrust: {export_run(run)}")
    print(f"thrust: view them with `tensorboard --logdir {args.runs[0]}`")
    return 0


def _cmd_web(args: argparse.Namespace) -> int:
    from .web.server import PlayerServer, ensure_node_modules

    ensure_node_modules()
    try:
        server = PlayerServer(port=args.port, verbose=args.verbose)
    except OSError as err:
        if err.errno != errno.EADDRINUSE:
            raise
        raise UsageError(
            f"port {args.port} is already in use on 127.0.0.1; pick another with --port N, or --port 0 for any free one"
        ) from None
    print(f"thrust: browser player on {server.url}  (Ctrl-C to stop)", flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.httpd.server_close()
    return 0


def _cmd_web_build(args: argparse.Namespace) -> int:
    from .web.site import build_site, embed_snippet

    site = build_site(args.out, args.bundles)
    first = site["bundles"][0]
    print(
        f"thrust: static player site in {site['path']} ({site['bytes'] / 2**20:.1f} MiB, bundles: "
        f"{', '.join(site['bundles'])})\n"
        f"  try it:  python -m http.server -b 127.0.0.1 -d {site['path']} 8000  ->  http://127.0.0.1:8000/?bundle={first}\n"
        "  publish: copy the folder to any static host (GitHub Pages, an S3 bucket); sub-paths work\n"
        f"  embed:   {embed_snippet('https://YOUR.SITE/PATH', first)}"
    )
    return 0


def _cmd_app(args: argparse.Namespace) -> int:
    import subprocess
    from pathlib import Path

    app = Path(__file__).resolve().parent / "dashboard" / "app.py"
    command = [
        sys.executable,
        "-m",
        "streamlit",
        "run",
        str(app),
        "--server.address",
        "127.0.0.1",
        "--server.port",
        str(args.port),
        "--server.headless",
        "true",
        "--browser.gatherUsageStats",
        "false",
        "--client.toolbarMode",
        "viewer",
    ]
    print(f"thrust: dashboard on http://127.0.0.1:{args.port}  (Ctrl-C to stop)", flush=True)
    dashboard = subprocess.Popen(command, env={**os.environ, "PYTHONUNBUFFERED": "1"})
    # SIGTERM to `thrust app` stops Streamlit too (Ctrl-C reaches both: they share the terminal's group).
    # Training jobs run in sessions of their own and go on; the dashboard finds them again when restarted.
    signal.signal(signal.SIGTERM, lambda signum, frame: dashboard.terminate())
    try:
        return dashboard.wait()
    except KeyboardInterrupt:
        dashboard.terminate()
        dashboard.wait(timeout=30)
        return 0


def _whole_number(text: str) -> int:
    """100000, 1e5 and 1_000_000 alike (argparse's int refuses the last two)."""
    try:
        number = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if not number.is_integer():
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number")
    return int(number)


def add_train_command(subcommands: argparse._SubParsersAction) -> None:
    """`thrust train ALGO ENV [options]` and `thrust train --resume RUN_DIR`."""
    train = subcommands.add_parser(
        "train",
        help="train an algorithm on an environment (or --resume a run)",
        description="Train ALGO (a2c, ppo, recurrent_ppo, dqn, sac, td3, ddpg) on ENV (a Thrust alias such as cartpole, "
        "or any gymnasium id such as CartPole-v1), starting from the tuned preset.",
    )
    train.add_argument("algo", nargs="?", help="a2c, ppo, recurrent_ppo, dqn, sac, td3 or ddpg")
    train.add_argument("env", nargs="?", help="bandit, cartpole, pendulum, snake, a thrust/... id, or a gymnasium id")
    train.add_argument("--timesteps", type=_whole_number, help="env steps to train (default: the preset's)")
    train.add_argument("--seed", type=int, default=0)
    train.add_argument(
        "--preset",
        default="default",
        help="the preset to start from: default (tuned, mostly the zoo's) or fast (where one exists)",
    )
    train.add_argument("--device", default="auto", help="auto (CUDA when present), cpu or cuda")
    train.add_argument("--run-dir", help="run folder (default: runs/<algo>-<env>-s<seed>-<time>)")
    train.add_argument("--eval-every", type=_whole_number, help="env steps between evaluations (default: timesteps/20)")
    train.add_argument("--eval-episodes", type=int, default=10, help="deterministic episodes per evaluation")
    train.add_argument("--stop-at-return", type=float, help="stop once an evaluation's mean return reaches this")
    train.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="override a config value, e.g. --set learning_rate=1e-3 (repeatable)",
    )
    train.add_argument(
        "--env-backend",
        choices=("numpy", "torch"),
        help="batched envs as numpy arrays on the host or torch tensors on the training device (default: the "
        "preset's, numpy except for --preset gpu)",
    )
    train.add_argument("--resume", metavar="RUN_DIR", help="continue a run from its last checkpoint")
    train.add_argument(
        "--seeds",
        metavar="RANGE",
        help="train these seeds (0-31, 3,5,8) in this process as one batch, their nets stacked (ppo, a2c; a run "
        "folder per seed under --runs-root)",
    )
    train.add_argument("--runs-root", default="runs", help="where --seeds puts its run folders (default: runs)")
    train.add_argument("--torch-threads", type=int, default=1, help="torch threads (a --seeds batch alone: the cores)")
    train.add_argument("--quiet", action="store_true", help="no progress bar")
    train.add_argument("--tensorboard", action="store_true", help="also log to RUN/tb for `tensorboard --logdir runs`")
    train.set_defaults(func=_cmd_train)


def add_compare_command(subcommands: argparse._SubParsersAction) -> None:
    """`thrust compare RUN... [--score ...] [--group-by ...] [--plot out.png]`."""
    from .runs.scores import SCORES

    cmp = subcommands.add_parser(
        "compare",
        help="compare runs grouped over seeds: mean and IQM with 95%% bootstrap CIs, probability of improvement",
        description="Runs that share every setting but the seed form a group; each run is scored by --score.",
    )
    cmp.add_argument("runs", nargs="+", help="run folders, or folders of runs such as runs/")
    cmp.add_argument(
        "--score",
        choices=list(SCORES),
        default="final",
        help="final: the last evaluation; steps / seconds: to the first evaluation at the threshold (a run that "
        "never got there counts at its whole length); auc: the mean evaluation over the run",
    )
    cmp.add_argument("--threshold", type=float, help="return for --score steps/seconds (default: each run's own)")
    cmp.add_argument("--group-by", help="comma list of config.json fields (algo, env, preset, seed, config.KEY, ...)")
    cmp.add_argument("--plot", metavar="OUT.png", help="also write the figure: curves, intervals, performance profile")
    cmp.add_argument("--x", choices=["step", "wall_s"], default="step", help="the curves' x axis in --plot")
    cmp.add_argument("--reps", type=int, default=2000, help="bootstrap resamples")
    cmp.set_defaults(func=_cmd_compare)


def add_eval_command(sub: argparse._SubParsersAction) -> None:
    """`thrust eval`: a run (torch) or a bundle (onnxruntime)."""
    ev = sub.add_parser("eval", help="evaluate a run or an exported bundle with its deterministic policy")
    ev.add_argument("path", help="a run folder (runs/<name>) or a bundle folder (export/<name>)")
    ev.add_argument("--episodes", type=int, default=10)
    ev.add_argument("--seed", type=int, default=0, help="episode i uses seed SEED+i")
    ev.add_argument(
        "--runtime",
        choices=("torch", "onnxruntime"),
        help="torch (a run) or onnxruntime (a bundle; needs no torch); default: by what PATH is",
    )
    ev.add_argument("--device", default="cpu", help="torch runtime only")
    ev.set_defaults(func=_cmd_eval)


def add_export_command(sub: argparse._SubParsersAction) -> None:
    """`thrust export`: a run's policy as an ONNX bundle."""
    ex = sub.add_parser("export", help="export a run's policy to an ONNX bundle (policy.onnx + manifest.json)")
    ex.add_argument("run_dir", help="a run folder (runs/<name>)")
    ex.add_argument("--out", help="bundle folder (default: export/<run-name>)")
    ex.add_argument("--force", action="store_true", help="replace a different bundle already in the folder")
    ex.set_defaults(func=_cmd_export)


def add_share_command(sub: argparse._SubParsersAction) -> None:
    """`thrust share RUN OUT/`: a run as a model repository (the Hugging Face Hub layout of the zoo)."""
    share = sub.add_parser(
        "share",
        help="write a run as a model repository: model card, ONNX bundle, Thrust and SB3 zips, replay.mp4",
        description="The folder has the layout rl-baselines3-zoo and CleanRL publish on the Hugging Face Hub; "
        "upload it with huggingface_hub. `thrust import OUT/` reads it back.",
    )
    share.add_argument("run_dir", help="a run folder (runs/<name>)")
    share.add_argument("out", help="the repository folder to write")
    share.add_argument("--episodes", type=int, default=10, help="deterministic evaluation episodes for the card")
    share.add_argument("--force", action="store_true", help="replace a folder that holds other files")
    share.set_defaults(func=_cmd_share)


def add_import_command(sub: argparse._SubParsersAction) -> None:
    """`thrust import`: an SB3 model or a foreign ONNX policy as a bundle."""
    from .interop.onnx_actions import POST_PROCESSING

    imp = sub.add_parser(
        "import",
        help="turn a Stable-Baselines3 model (.zip) or a foreign ONNX policy into a bundle (no pickle is run)",
        description="SB3 .zip: rebuild the deterministic policy from its weights and export it, checked against "
        "onnxruntime and (where stable-baselines3 is installed) SB3's own predict. ONNX: append Thrust's int32/float32 "
        "'action' output to the named output, checked against the source model.",
    )
    imp.add_argument(
        "source", help="an SB3 model file (.zip, from model.save), an ONNX policy (.onnx) or a `thrust share` folder"
    )
    imp.add_argument("--env", help="the env it was trained on: a Thrust name or a gymnasium id (not for a share folder)")
    imp.add_argument("--out", help="bundle folder (default: export/<file name>)")
    imp.add_argument("--vec-normalize", metavar="PKL", help="VecNormalize statistics (env.save(PKL)) to fold into the graph")
    imp.add_argument(
        "--trust-pickle",
        action="store_true",
        help="read --vec-normalize with Python's unpickler (runs code from the file) when the safe reader refuses it",
    )
    imp.add_argument(
        "--action-output", default="action", help="ONNX: the output holding the action or scores (a name, or 0 for the first)"
    )
    imp.add_argument(
        "--post",
        choices=POST_PROCESSING,
        default="none",
        help="ONNX: argmax (scores), clip (Gaussian mean), tanh (pre-squash mean), rescale ([-1, 1] to bounds), none",
    )
    imp.add_argument("--force", action="store_true", help="replace a different bundle already in the folder")
    imp.set_defaults(func=_cmd_import)


def add_sweep_command(sub: argparse._SubParsersAction) -> None:
    """`thrust sweep`: a sweep file's runs, or the continuation of a sweep."""
    sw = sub.add_parser(
        "sweep",
        help="many runs: an Optuna search (and seeds) over a config, in parallel processes or on Ray",
        description="Run the sweep a YAML file describes (examples/sweeps/), or continue one.",
    )
    sw.add_argument("file", nargs="?", help="the sweep file")
    sw.add_argument("--resume", metavar="SWEEP_DIR", help="continue a sweep: finished trials kept, running ones resumed")
    sw.add_argument("--workers", type=int, help="worker processes (default: the file's, else one per core)")
    sw.add_argument("--runs-root", default="runs", help="where the sweep's folder goes (default runs/)")
    sw.add_argument(
        "--engine", choices=("optuna", "ray"), help="optuna: embedded (default); ray: Ray Tune (ASHA, PBT, clusters)"
    )
    sw.add_argument("--address", help="Ray engine: join the Ray cluster at auto or HOST:PORT (default: a local Ray)")
    sw.set_defaults(func=_cmd_sweep)


def add_serve_commands(sub: argparse._SubParsersAction) -> None:
    """`thrust tb-export`, `thrust app` (the dashboard), `thrust web` and `thrust web build`."""
    tb = sub.add_parser("tb-export", help="write runs' records as TensorBoard events (RUN/tb)")
    tb.add_argument("runs", nargs="+", help="run folders, or folders of runs such as runs/")
    tb.set_defaults(func=_cmd_tb_export)

    app = sub.add_parser("app", help="start the training dashboard (Streamlit) on 127.0.0.1")
    app.add_argument("--port", type=int, default=8501)
    app.set_defaults(func=_cmd_app)

    web = sub.add_parser("web", help="serve the browser player and the bundles in export/ on 127.0.0.1")
    web.add_argument("--port", type=int, default=8000, help="0 picks any free port")
    web.add_argument("--verbose", action="store_true", help="log every request")
    web.set_defaults(func=_cmd_web)
    web_sub = web.add_subparsers(dest="web_command", metavar="build")
    build = web_sub.add_parser(
        "build", help="write the player and bundles as a static site (any static host, any sub-path, offline)"
    )
    build.add_argument("out", help="the site folder to write (replaced if an earlier build made it)")
    build.add_argument("bundles", nargs="*", help="bundle folders or names under export/ (default: every valid one)")
    build.set_defaults(func=_cmd_web_build)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="thrust", description="Thrust: RL training, ONNX export, browser playback.")
    parser.add_argument("--debug", action="store_true", help="print the traceback of an error, not just its line")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    demo = sub.add_parser("demo", help="play one random episode of each environment and print what happened")
    demo.add_argument("--seed", type=int, default=0)
    demo.set_defaults(func=_cmd_demo)

    envs = sub.add_parser("envs", help="list Thrust's environments and their spaces")
    envs.set_defaults(func=_cmd_envs)

    add_train_command(sub)
    add_eval_command(sub)
    add_export_command(sub)
    add_import_command(sub)
    add_share_command(sub)
    add_compare_command(sub)
    add_sweep_command(sub)
    add_serve_commands(sub)
    return parser


class UsageError(ValueError):
    """The command line itself is wrong."""


def error_line(err: Exception) -> tuple[str, int]:
    """The one line an error is reported as, and the exit code: 2 for bad input, 1 for the rest."""
    if isinstance(err, ValueError):  # every Thrust input error is a ValueError subclass with a full sentence
        return str(err), 2
    if isinstance(err, OSError):  # disk full, permissions, a file that vanished: name the file and the cause
        where = f" ({err.filename})" if err.filename else ""
        return f"{err.strerror or err}{where}; earlier files in the run folder are intact", 1
    return f"unexpected {type(err).__name__}: {err}", 1


def main(argv: Sequence[str] | None = None) -> int:
    """Run one command; any error is one line on stderr (the traceback too with --debug or THRUST_DEBUG=1)."""
    argv = list(sys.argv[1:] if argv is None else argv)
    debug = "--debug" in argv or os.environ.get("THRUST_DEBUG") == "1"  # anywhere on the line
    args = build_parser().parse_args([word for word in argv if word != "--debug"])
    try:
        return args.func(args)
    except BrokenPipeError:  # the reader went away (`thrust eval ... | head`): stop quietly, as Unix tools do
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # so the exit-time flush does not fail too
        return 0
    except Exception as err:
        message, code = error_line(err)
        if debug:
            traceback.print_exception(err)
        elif code == 1:
            message += " (run with --debug for the traceback)"
    print(f"thrust: error: {message}", file=sys.stderr)
    return code
