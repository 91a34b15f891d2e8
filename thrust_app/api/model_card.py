"""The README.md of a shared model: front matter in the Hugging Face Hub's model-index form (what the Hub shows as
the model's evaluation), then what the model is, how well it plays, how to use it, how it was trained."""

from __future__ import annotations

from typing import Any

from ..interop.sb3_export import SB3_CLASSES
from ..training.run_spec import RunSpec


def model_card(spec: RunSpec, summary: dict[str, Any], results: dict[str, Any], pieces: dict[str, Any],
               notes: dict[str, str | None]) -> str:  # fmt: skip
    """The card's Markdown: `pieces` names the files the folder holds, `notes` why others are missing."""
    algo, env = spec.algo.upper(), spec.env
    mean = f"{results['mean_reward']:.2f} +/- {results['std_reward']:.2f}"
    tags = [env, "deep-reinforcement-learning", "reinforcement-learning", "thrust", "onnx"]
    tags += ["stable-baselines3"] if pieces.get("sb3_zip") else []
    lines = ["---", "library_name: thrust", "tags:", *(f"- {tag}" for tag in tags), "model-index:", f"- name: {algo}"]
    lines += ["  results:", "  - task:", "      type: reinforcement-learning", "      name: reinforcement-learning"]
    lines += ["    dataset:", f"      name: {env}", f"      type: {env}", "    metrics:", "    - type: mean_reward"]
    lines += [f"      value: {mean}", "      name: mean_reward", "      verified: false", "---", ""]
    lines += [f"# {algo} agent playing {env}", ""]
    version = summary.get("thrust_version", "")
    lines += [f"A trained **{algo}** policy for **{env}**, trained and shared with Thrust {version}.", ""]
    lines += evaluation_section(results) + usage_section(spec, pieces, notes) + training_section(spec, summary)
    return "\n".join(lines) + "\n"


def evaluation_section(results: dict[str, Any]) -> list[str]:
    lines = ["## Evaluation", "", "| what | value |", "|---|---|"]
    lines.append(f"| mean return +- std, {results['n_eval_episodes']} deterministic episodes | "
                 f"{results['mean_reward']:.2f} +- {results['std_reward']:.2f} |")  # fmt: skip
    seeds = results.get("seeds")
    if seeds:
        lines.append(f"| IQM of the final evaluation over {seeds['runs']} seeds [95% bootstrap CI] | {seeds['text']} |")
    return [*lines, ""]


def usage_section(spec: RunSpec, pieces: dict[str, Any], notes: dict[str, str | None]) -> list[str]:
    lines = ["## Use it", "", "| file | how |", "|---|---|"]
    lines.append('| `model.zip` | `thrust_app.load_model("model.zip").predict(obs)`: Thrust\'s model, to learn on |')
    bundle = pieces["bundle"]
    lines.append(f"| `{bundle}/` | the ONNX bundle: `thrust eval {bundle}/`, onnxruntime, the browser player |")
    if pieces.get("sb3_zip"):
        sb3_class = SB3_CLASSES[spec.algo]
        lines.append(f'| `{pieces["sb3_zip"]}` | `stable_baselines3.{sb3_class}.load("{pieces["sb3_zip"]}").predict(obs)` |')
    if pieces.get("replay"):
        lines.append(f"| `{pieces['replay']}` | one deterministic episode |")
    lines.append("| `config.json`, `results.json` | the run's settings; the evaluation above |")
    missing = [f"- no {name.replace('_', ' ')}: {why}" for name, why in notes.items() if why]
    return [*lines, "", *missing, *([""] if missing else [])]


def training_section(spec: RunSpec, summary: dict[str, Any]) -> list[str]:
    lines = ["## Training", "", f"`{spec.command()}`", ""]
    if summary:
        lines += [f"{summary.get('timesteps', 0):,} env steps in {summary.get('wall_s', 0):.1f} s on {summary.get('device')} "
                  f"(torch {summary.get('torch_version')}), ended {summary.get('status')}.", ""]  # fmt: skip
    lines += ["| hyperparameter | value |", "|---|---|"]
    lines += [f"| {key} | {value} |" for key, value in sorted(spec.config.items())]
    return [*lines, ""]


__all__ = ["model_card"]
