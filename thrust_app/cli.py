"""The `thrust` command line: one sub-command per job, each a thin layer over the Python API."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence


def _cmd_demo(args: argparse.Namespace) -> int:
    from .demo import run_demo

    run_demo(seed=args.seed)
    return 0


def _cmd_envs(args: argparse.Namespace) -> int:
    from .envs.core import ALIASES, make_core

    for alias, env_id in ALIASES.items():
        env = make_core(env_id)
        space = env.action_space
        actions = f"Discrete({space.n})" if hasattr(space, "n") else f"Box{space.shape} in [{space.low}, {space.high}]"
        print(f"{alias:9s} {env_id:20s} obs {env.observation_space.shape}  actions {actions}  "
              f"limit {env.max_episode_steps or '-'}")
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="thrust", description="Thrust: RL training, ONNX export, browser playback.")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    demo = sub.add_parser("demo", help="play one random episode of each environment and print what happened")
    demo.add_argument("--seed", type=int, default=0)
    demo.set_defaults(func=_cmd_demo)

    envs = sub.add_parser("envs", help="list Thrust's environments and their spaces")
    envs.set_defaults(func=_cmd_envs)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    from .envs.core import EnvError

    try:
        return args.func(args)
    except EnvError as err:
        print(f"thrust: error: {err}", file=sys.stderr)
        return 2
