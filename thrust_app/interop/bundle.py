"""Exported policy bundles: `policy.onnx` + `manifest.json`, loaded and run without torch.

A bundle is what leaves Thrust: the deterministic policy as one ONNX file (weights inside, dynamic
batch axis) and a manifest saying what goes in and what comes out. This module reads bundles,
checks them against their manifest and their env, and runs them in onnxruntime.

Action dtype. Discrete actions come out of the graph as **int32** on every runtime: onnxruntime
in Python gives numpy int32, onnxruntime-web gives an Int32Array (int64 would need BigInt in the
browser, and the Rust/Burn design lost its actions to exactly such an integer-width mismatch).
Continuous actions are float32, already squashed and scaled to the env's bounds. `read_actions`
checks the dtype it gets and fails loudly on any other.
"""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ..envs.pipeline import ObservationPart
from .manifest import BundleError, check_manifest, split_observation

#: The reference bundles that come with Thrust's source (`make reference-bundles`): found by every command
#: that looks a bundle up by name, never written to.
REFERENCE_DIR = Path(__file__).resolve().parents[2] / "export"


def export_dir() -> Path:
    """Where bundles are written and looked up first: $THRUST_EXPORT_DIR, else the working directory's export/."""
    return Path(os.environ.get("THRUST_EXPORT_DIR", "export"))


def bundle_dirs(user_dir: Path | None = None) -> list[Path]:
    """The folders bundles are found in, in order: the user's export folder (`export_dir()` unless given),
    then the reference bundles."""
    user = Path(user_dir) if user_dir is not None else export_dir()
    return [user] if user.resolve() == REFERENCE_DIR.resolve() else [user, REFERENCE_DIR]


def find_bundle(name: str, dirs: list[Path]) -> Path:
    """The folder of the bundle called `name` in the first of `dirs` that has one (the first of `dirs` if none)."""
    return next((folder / name for folder in dirs if (folder / name).is_dir()), dirs[0] / name)


MODEL_FILE = "policy.onnx"
MANIFEST_FILE = "manifest.json"
#: onnxruntime-web 1.31 (the browser player) reads ONNX IR versions up to this one.
MAX_IR_VERSION = 13
DISCRETE_ACTION_DTYPE = "int32"
CONTINUOUS_ACTION_DTYPE = "float32"


def sha256_file(path: Path) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


@dataclass
class Bundle:
    """A bundle folder, its manifest read and its model file checked against the manifest's sha256."""

    path: Path
    manifest: dict[str, Any]

    @property
    def model_path(self) -> Path:
        return self.path / MODEL_FILE

    @property
    def env_id(self) -> str:
        return self.manifest["env_id"]

    @property
    def discrete(self) -> bool:
        """Integer actions: one (Discrete) or one per component (MultiDiscrete)."""
        return self.manifest["action_space"]["type"] in ("discrete", "multi_discrete")

    @property
    def action_output(self) -> str:
        return self.manifest["action_output"]

    @property
    def pipeline(self) -> Any:
        """The observation pipeline the policy was trained in (envs/pipeline.py): evaluations make the env in it."""
        from ..envs.pipeline import Pipeline

        return Pipeline.of(self.manifest["observation"].get("pipeline"))


def load_bundle(path: str | Path) -> Bundle:
    """Open a bundle folder (or its manifest.json / policy.onnx); any inconsistency is a BundleError."""
    path = Path(path)
    if path.is_file() and path.name in (MODEL_FILE, MANIFEST_FILE):
        path = path.parent
    if not path.exists():
        raise BundleError(f"no bundle at {path}; export one with `thrust export RUN_DIR` or pick one under export/")
    if not (path / MANIFEST_FILE).is_file():
        raise BundleError(f"{path} is not a policy bundle: it has no {MANIFEST_FILE}")
    try:
        manifest = json.loads((path / MANIFEST_FILE).read_text())
    except json.JSONDecodeError as err:
        raise BundleError(f"{path / MANIFEST_FILE} is not valid JSON: {err}") from None
    check_manifest(manifest, path / MANIFEST_FILE)
    model = path / MODEL_FILE
    if not model.is_file():
        raise BundleError(f"{path} has a manifest but no {MODEL_FILE}")
    digest = sha256_file(model)
    if digest != manifest.get("sha256"):
        raise BundleError(
            f"{model} does not match its manifest: sha256 {digest[:12]}... but the manifest says "
            f"{str(manifest.get('sha256'))[:12]}...; re-export the bundle or restore the file"
        )
    return Bundle(path, manifest)


def check_model_file(path: Path) -> Any:
    """Parse an ONNX file and check what the browser needs: one file, IR version <= MAX_IR_VERSION."""
    import onnx

    try:
        model = onnx.load(str(path), load_external_data=False)
        onnx.checker.check_model(model)
    except Exception as err:  # onnx raises DecodeError, ValidationError, ...: all mean "not a usable model"
        raise BundleError(f"{path} is not a valid ONNX model: {str(err).strip().splitlines()[0][:200]}") from None
    if model.ir_version > MAX_IR_VERSION:
        raise BundleError(f"{path} has ONNX IR version {model.ir_version}; onnxruntime-web reads <= {MAX_IR_VERSION}")
    if any(t.data_location == onnx.TensorProto.EXTERNAL for t in model.graph.initializer):
        raise BundleError(f"{path} keeps its weights in a side file; bundles must be a single .onnx file")
    return model


def read_actions(outputs: dict[str, np.ndarray], bundle: Bundle) -> np.ndarray:
    """The action array from a model's outputs, checked for the dtype the manifest promises."""
    expected = DISCRETE_ACTION_DTYPE if bundle.discrete else CONTINUOUS_ACTION_DTYPE
    actions = outputs.get(bundle.action_output)
    if actions is None:
        raise BundleError(f"the model gave no '{bundle.action_output}' output (it gave {sorted(outputs)})")
    if actions.dtype != np.dtype(expected):
        raise BundleError(
            f"action output '{bundle.action_output}' has dtype {actions.dtype}, expected {expected}; "
            "the bundle and this reader disagree on the action dtype"
        )
    return actions


class OnnxPolicy:
    """A bundle's policy in onnxruntime on the CPU execution provider (named explicitly)."""

    PROVIDERS: tuple[str, ...] = ("CPUExecutionProvider",)

    def __init__(self, bundle: Bundle, providers: list[str] | None = None) -> None:
        import onnxruntime as ort

        check_model_file(bundle.model_path)
        self.bundle = bundle
        options = ort.SessionOptions()
        options.intra_op_num_threads = 1
        options.inter_op_num_threads = 1
        self.session = ort.InferenceSession(str(bundle.model_path), options, providers=list(providers or self.PROVIDERS))
        inputs = self.session.get_inputs()
        memory = bundle.manifest.get("memory") or {}
        #: A recurrent policy's memory input and output, and its width (0: no memory).
        self.state_name, self.next_state_name = memory.get("input"), memory.get("output")
        self.state_size: int = memory.get("size", 0)
        #: A Dict or Tuple observation's parts, each an input of its own (the manifest's observation.parts).
        self.parts = [ObservationPart.of(entry) for entry in bundle.manifest["observation"].get("parts", [])]
        n_obs = len(self.parts) or 1
        others = [i.name for i in inputs[n_obs:] if i.name != self.state_name]
        if len(others) > 1 or len(inputs) - len(others) - n_obs != bool(self.state_size):
            raise BundleError(
                f"{bundle.model_path} has inputs {[i.name for i in inputs]}; a policy takes the observation (one input "
                "per part of a Dict, as the manifest's observation.parts says; and its memory, as the manifest's "
                "'memory' names it; and the action mask)"
            )
        self.input_name = inputs[0].name
        #: The action mask's input, for a policy of an env that offers masks (True = allowed).
        self.mask_name = others[0] if others else None
        #: A graph exported with a fixed batch of 1 (SB3's export recipe) is run one observation at a time.
        self.one_at_a_time = inputs[0].shape[0] == 1
        model_shape = list(inputs[0].shape[1:])
        obs_shape = list(self.parts[0].shape if self.parts else bundle.manifest["observation"]["shape"])
        if model_shape != obs_shape:
            raise BundleError(
                f"{bundle.model_path} takes observations of shape {model_shape}, but "
                f"{bundle.env_id} gives {obs_shape}: the model does not fit the env"
            )
        self.output_names = [o.name for o in self.session.get_outputs()]
        #: The observations' dtype: float32, or uint8 for byte frames (scaled inside the graph); a Dict's flat vector
        #: is float32 whatever its parts' dtypes.
        self.obs_dtype = np.uint8 if inputs[0].type == "tensor(uint8)" and not self.parts else np.float32

    def run(self, obs: np.ndarray, masks: np.ndarray | None = None, state: np.ndarray | None = None) -> dict[str, np.ndarray]:
        """The graph's outputs for a batch of observations (and, for a masked policy, their action masks:
        all actions allowed where none are given; for a recurrent one, their memories: zeros where none are)."""
        obs = np.ascontiguousarray(obs, dtype=self.obs_dtype)
        if self.one_at_a_time and obs.shape[0] != 1:
            rows = [
                self.run(obs[i : i + 1], *(None if x is None else x[i : i + 1] for x in (masks, state)))
                for i in range(obs.shape[0])
            ]
            return {name: np.concatenate([row[name] for row in rows]) for name in self.output_names}
        feed = dict(zip((p.name for p in self.parts), split_parts(obs, self.parts), strict=True)) if self.parts else {}
        feed = feed or {self.input_name: obs}
        if self.state_size:
            memory = np.zeros((len(obs), self.state_size), np.float32) if state is None else state
            feed[self.state_name] = np.ascontiguousarray(memory, dtype=np.float32)
        if self.mask_name is not None:
            n_actions = self.bundle.manifest["action_space"]["n"]
            feed[self.mask_name] = np.ones((len(obs), n_actions), bool) if masks is None else np.asarray(masks, bool)
        outputs = self.session.run(None, feed)
        return dict(zip(self.output_names, outputs, strict=True))

    def act(self, obs: np.ndarray, masks: np.ndarray | None = None, state: np.ndarray | None = None):
        """The actions for a batch of observations; a recurrent policy's with its next memory, (actions, state),
        as `evaluate` calls it."""
        outputs = self.run(obs, masks, state)
        actions = read_actions(outputs, self.bundle)
        return (actions, outputs[self.next_state_name]) if self.state_size else actions

    __call__ = act


def split_parts(flat: np.ndarray, parts: list[Any]) -> list[np.ndarray]:
    """A batch of flat observations (gymnasium's flatten of a Dict or Tuple) as one array per part, each as the env
    gives it (`manifest.split_observation` row by row): a Box in its dtype and shape, MultiBinary as float32, a
    Discrete or MultiDiscrete part as int64."""
    rows = [split_observation(row, [part.describe() for part in parts]) for row in flat.tolist()]
    arrays = []
    for index, part in enumerate(parts):
        dtype = np.int64 if part.kind in ("discrete", "multi_discrete") else np.uint8 if part.dtype == "uint8" else np.float32
        values = np.asarray([row[index] for row in rows], dtype=dtype)
        arrays.append(np.ascontiguousarray(values.reshape(len(flat), *part.shape)))
    return arrays


def check_bundle_fits_env(bundle: Bundle) -> None:
    """The manifest's observation and action spaces must be the env's own."""
    from ..envs import env_spaces

    obs_space, action_space = env_spaces(bundle.env_id, bundle.pipeline)
    obs_shape = list(obs_space.shape)
    if obs_shape != list(bundle.manifest["observation"]["shape"]):
        raise BundleError(
            f"bundle {bundle.path} expects observations {bundle.manifest['observation']['shape']}, "
            f"but {bundle.env_id} gives {obs_shape}"
        )
    space = bundle.manifest["action_space"]
    if space["type"] == "multi_discrete":
        if list(getattr(action_space, "nvec", ())) != space["nvec"]:
            raise BundleError(f"bundle {bundle.path} acts in {space}, which is not {bundle.env_id}'s action space")
        return
    if bundle.discrete != hasattr(action_space, "n") or (bundle.discrete and space["n"] != action_space.n):
        raise BundleError(f"bundle {bundle.path} acts in {space}, which is not {bundle.env_id}'s action space")
