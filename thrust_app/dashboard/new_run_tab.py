"""The New run tab: env, algorithm, device, preset and every hyperparameter, checked before a run starts."""

from __future__ import annotations

import dataclasses
from typing import Any

import streamlit as st

from thrust_app.algos import ALGOS
from thrust_app.config import ConfigError, apply_overrides, field_help
from thrust_app.dashboard import jobs
from thrust_app.dashboard.widgets import action_kind, chosen_key, fmt_value, machine_devices
from thrust_app.envs.core import ALIASES
from thrust_app.training.presets import DEFAULT_PRESET, get_preset, preset_names

OTHER_ENV = "other gymnasium id…"


def hp_key(algo: str, name: str) -> str:
    return f"hp-{algo}-{name}"


def shown_preset(algo: str, env_name: str):
    """The preset a run of `algo` on `env_name` starts from (the form's choice, else the pair's default one):
    looked up by the env's full id, as the trainer does."""
    from thrust_app.training.run_spec import resolve_env_name

    return get_preset(algo, resolve_env_name(env_name), st.session_state.get("new-preset", DEFAULT_PRESET))


def shown_value(key: str, preset_value: str) -> str:
    """`key`, its field showing `preset_value` unless the user typed another since the preset was chosen. The value
    goes through the field's state, not the widget's default: after a reset (another env, algorithm or preset)
    the browser then shows the new value (it kept showing what it had, bandit's 4,000 steps for CartPole)."""
    if key not in st.session_state:
        st.session_state[key] = preset_value
    return key


def reset_form_values() -> None:
    """The env or the algorithm changed: back to the pair's default preset, typed values forgotten."""
    st.session_state.pop("new-preset", None)
    reset_typed_values()


def reset_typed_values() -> None:
    """The preset changed: forget typed values, so the form shows the preset's."""
    for key in [key for key in st.session_state if str(key).startswith("hp-") or key == "new-timesteps"]:
        del st.session_state[key]


def read_hyperparameters(algo: str, env_name: str, errors: dict[str, str]) -> dict[str, Any]:
    """Every hyperparameter field of the form, parsed and checked; a bad one's message goes to `errors`."""
    base = apply_overrides(ALGOS[algo].Config(), shown_preset(algo, env_name).config)
    values = {}
    for f in dataclasses.fields(base):
        raw = st.session_state.get(hp_key(algo, f.name), fmt_value(getattr(base, f.name)))
        try:
            values[f.name] = getattr(apply_overrides(base, {f.name: raw}, algo), f.name)
        except ConfigError as err:
            errors[f.name] = str(err)
    return values


def read_whole_numbers(minimums: dict[str, int], errors: dict[str, str]) -> dict[str, int]:
    """The form's `new-<name>` fields as whole numbers of at least their minimum; bad ones go to `errors`."""
    numbers = {}
    for name, minimum in minimums.items():
        raw = str(st.session_state.get(f"new-{name}", "")).strip()
        try:
            numbers[name] = int(float(raw))
            if numbers[name] < minimum or not float(raw).is_integer():
                raise ValueError
        except ValueError:
            errors[name] = f"{name} must be a whole number >= {minimum}, got {raw!r}"
    return numbers


def submit_new_run(env_name: str, algo: str) -> None:
    """Form callback: validate every field on its own, start the run only if all are valid. Every field's
    value is sent (the trainer keeps, as the run's overrides, those that differ from the preset)."""
    errors: dict[str, str] = {}
    overrides = read_hyperparameters(algo, env_name, errors)
    numbers = read_whole_numbers({"timesteps": 1, "seed": 0, "seeds": 1}, errors)
    st.session_state.form_errors = errors
    if errors:
        st.session_state.flash = ("error", f"Fix the {len(errors)} field(s) marked below; nothing was started.")
        return
    seeds = range(numbers["seed"], numbers["seed"] + numbers["seeds"])
    try:
        paths = [
            jobs.start_run(
                algo,
                env_name,
                timesteps=numbers["timesteps"],
                seed=seed,
                device=st.session_state.get("new-device", "auto"),
                overrides=overrides,
                preset=st.session_state.get("new-preset", DEFAULT_PRESET),
            )
            for seed in seeds
        ]
    except ValueError as err:
        st.session_state.flash = ("error", str(err))
        return
    st.session_state.current_run = paths[0].name
    st.session_state[chosen_key("train-run")] = paths[0].name  # the Training tab shows the (first) new run
    where = (
        f"in {paths[0]}"
        if len(paths) == 1
        else f"with seeds {seeds[0]}-{seeds[-1]} ({len(paths)} runs; compare them in **Compare**)"
    )
    st.session_state.flash = ("success", f"Started {algo} on {env_name} {where}. Follow it in **Training**.")


def field_error(name: str) -> None:
    message = st.session_state.get("form_errors", {}).get(name)
    if message:
        st.error(message, icon="⚠️")


def choose_env() -> tuple[str, type] | None:
    """The env picked in the New run form and its action kind, or None (with the reason shown)."""
    choices = [*ALIASES, OTHER_ENV]
    env_choice = st.selectbox(
        "Environment",
        choices,
        key="new-env",
        help="Thrust's four envs, or any gymnasium id (Atari's, MinAtar's, MuJoCo's, your own: docs/envs.md)",
        on_change=reset_form_values,
    )
    env_name = (
        st.text_input("gymnasium id", "CartPole-v1", key="new-gym-id", on_change=reset_form_values)
        if env_choice == OTHER_ENV
        else env_choice
    )
    if ":" in env_name and not st.checkbox(
        f"Import the Python module {env_name.split(':')[0]!r} to register this env", key="new-allow-import"
    ):
        st.warning(
            "An id of the form module:Env imports that module (running its code) before making the env; "
            "tick the box above to allow it."
        )
        return None
    try:
        return env_name, action_kind(env_name)
    except ValueError as err:
        st.error(str(err))
        return None


def load_zoo_settings(algo: str, env_name: str, fields: set[str]) -> None:
    """Fill the form from an uploaded rl-baselines3-zoo hyperparameter file (its first entry)."""
    from thrust_app.training.run_spec import resolve_env_name
    from thrust_app.training.zoo_yaml import GYMNASIUM_TWINS, from_zoo_yaml

    uploaded = st.file_uploader("Load settings from an rl-zoo YAML file", type=["yml", "yaml"], key="zoo-upload")
    if uploaded is None or st.session_state.get("zoo-loaded") == uploaded.file_id:
        return
    try:
        env_id, timesteps, overrides = from_zoo_yaml(uploaded.getvalue().decode(), fields)
        apply_overrides(ALGOS[algo].Config(), overrides, algo)  # every value checked before any is shown
    except (ConfigError, UnicodeDecodeError) as err:
        st.error(f"{uploaded.name}: {err}")
        return
    resolved = resolve_env_name(env_name)
    if env_id not in (env_name, resolved, GYMNASIUM_TWINS.get(resolved)):
        st.warning(f"{uploaded.name} is for {env_id}; choose that environment (or its Thrust twin) first.")
        return
    for key, value in overrides.items():
        st.session_state[hp_key(algo, key)] = fmt_value(value)
    if timesteps is not None:
        st.session_state["new-timesteps"] = str(timesteps)
    st.session_state["zoo-loaded"] = uploaded.file_id
    st.success(f"Loaded {len(overrides)} settings from {uploaded.name}.")


def new_run_tab() -> None:
    chosen = choose_env()
    if chosen is None:
        return
    env_name, kind = chosen
    fitting = [name for name, cls in ALGOS.items() if kind in cls.supports]
    cols = st.columns(2)
    algo = cols[0].selectbox(
        "Algorithm",
        fitting,
        key="new-algo",
        help=f"only the algorithms that can act in this env's {kind} action space",
        on_change=reset_form_values,
    )
    cols[1].selectbox(
        "Device",
        ["auto", "cpu", "cuda"],
        key="new-device",
        help=f"this machine: {machine_devices()}; auto takes CUDA when present",
    )
    st.caption(f"This machine: {machine_devices()}")
    from thrust_app.training.run_spec import resolve_env_name

    st.selectbox(
        "Preset",
        preset_names(algo, resolve_env_name(env_name)),
        key="new-preset",
        help="where the settings start: the pair's tuned default, or a named one (fast: the quickest CartPole solve "
        "on one core; gpu: 4,096 envs on a GPU with CUDA graphs)",
        on_change=reset_typed_values,
    )
    preset = shown_preset(algo, env_name)
    config = apply_overrides(ALGOS[algo].Config(), preset.config)
    load_zoo_settings(algo, env_name, {f.name for f in dataclasses.fields(config)})
    new_run_form(env_name, algo, preset, config)


def new_run_form(env_name: str, algo: str, preset, config) -> None:
    """The form of a new run's budget, seeds and hyperparameters, filled from `preset` (its `config`)."""
    helps = field_help(type(config))
    with st.form("new-run"):
        timesteps_column, seed_column, seeds_column = st.columns(3)
        with timesteps_column:
            st.text_input("Timesteps", key=shown_value("new-timesteps", str(preset.timesteps)))
            field_error("timesteps")
        with seed_column:
            st.text_input("Seed", "0", key="new-seed")
            field_error("seed")
        with seeds_column:
            st.text_input("Seeds", "1", key="new-seeds", help="how many runs: seeds SEED, SEED+1, ... (each its own process)")
            field_error("seeds")
        st.markdown(f"**Hyperparameters** — preset: {preset.source}")
        columns = st.columns(3)
        for i, f in enumerate(dataclasses.fields(config)):
            with columns[i % 3]:
                key = shown_value(hp_key(algo, f.name), fmt_value(getattr(config, f.name)))
                st.text_input(f.name, key=key, help=helps[f.name])
                field_error(f.name)
        st.form_submit_button("Start training", type="primary", on_click=submit_new_run, args=(env_name, algo))
