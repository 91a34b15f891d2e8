"""Give a foreign ONNX policy graph Thrust's `action` output: post-processing appended as graph nodes.

A policy exported by another library ends where its network ends: SB3's export recipe, for
instance, outputs an int64 action, a value and a log-probability with the batch fixed at 1. The
bundle contract wants an `action` output of int32 (discrete) or float32 already within the env's
bounds. `add_action_output` appends the nodes that make it from the output the user names:

- `argmax`  — the output holds scores (logits, Q-values): action = int32(argmax over the last axis)
- `clip`    — a Gaussian mean: action = min(max(out, low), high)
- `tanh`    — a pre-squash mean (SAC-style): action = low + (tanh(out) + 1) / 2 * (high - low)
- `rescale` — already in [-1, 1]: action = low + (out + 1) / 2 * (high - low)
- `none`    — already the action: only the dtype is converted (int64 -> int32, float64 -> float32)

`post_process` is the same arithmetic in numpy, which the importer's parity check applies to the
source model's own outputs.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..envs.core import Box, Discrete
from .manifest import BundleError

POST_PROCESSING = ("none", "argmax", "clip", "tanh", "rescale")
ACTION = "action"


def post_process(raw: np.ndarray, post: str, action_space: Box | Discrete) -> np.ndarray:
    """What the appended nodes compute, in numpy (the reference for the parity check)."""
    if isinstance(action_space, Discrete):
        return (raw.argmax(axis=-1) if post == "argmax" else raw.reshape(len(raw))).astype(np.int32)
    low, high = np.asarray(action_space.low, np.float32), np.asarray(action_space.high, np.float32)
    raw = raw.astype(np.float32).reshape((len(raw), *action_space.shape))
    if post == "clip":
        return np.minimum(np.maximum(raw, low), high)
    if post == "tanh":
        raw = np.tanh(raw)
    if post in ("tanh", "rescale"):
        return (low + 0.5 * (raw + 1.0) * (high - low)).astype(np.float32)
    return raw


def check_choice(post: str, action_space: Box | Discrete) -> None:
    if post not in POST_PROCESSING:
        raise BundleError(f"unknown post-processing {post!r}; choose one of {', '.join(POST_PROCESSING)}")
    fits = ("none", "argmax") if isinstance(action_space, Discrete) else ("none", "clip", "tanh", "rescale")
    if post not in fits:
        kind = "discrete" if isinstance(action_space, Discrete) else "continuous (Box)"
        raise BundleError(f"--post {post} does not fit a {kind} action space; choose one of {', '.join(fits)}")


def _rename_tensor(graph: Any, old: str, new: str) -> None:
    for node in graph.node:
        node.input[:] = [new if name == old else name for name in node.input]
        node.output[:] = [new if name == old else name for name in node.output]
    for value in graph.output:
        if value.name == old:
            value.name = new


#: What an action head adds to a graph: its nodes, the source outputs kept, the action's value info, and
#: the manifest's output entries.
ActionNodes = tuple[list[Any], list[Any], Any, list[dict[str, Any]]]


def _discrete_action(graph: Any, source: str, post: str, action_space: Discrete, batch_dim: Any) -> ActionNodes:
    """The nodes from a discrete policy's `source` output to an int32 `action` (argmax of scores, or a cast)."""
    from onnx import TensorProto, helper, numpy_helper

    nodes, kept, entries = [], [], []
    if post == "argmax":
        # ArgMax over axis 1 of [batch, n] (axis=-1 needs opset 11); int64 -> int32
        nodes.append(helper.make_node("ArgMax", [source], ["thrust_argmax_int64"], axis=1, keepdims=0))
        nodes.append(helper.make_node("Cast", ["thrust_argmax_int64"], [ACTION], to=TensorProto.INT32))
        kept.append(next(output for output in graph.output if output.name == source))
        entries.append({"name": source, "dtype": "float32", "shape": [batch_dim, action_space.n], "meaning": "scores"})
    else:
        nodes.append(helper.make_node("Reshape", [source, "thrust_batch_shape"], ["thrust_action_flat"]))
        nodes.append(helper.make_node("Cast", ["thrust_action_flat"], [ACTION], to=TensorProto.INT32))
        graph.initializer.append(numpy_helper.from_array(np.array([-1], dtype=np.int64), "thrust_batch_shape"))
    value = helper.make_tensor_value_info(ACTION, TensorProto.INT32, [batch_dim])
    entries.append({"name": ACTION, "dtype": "int32", "shape": [batch_dim], "meaning": f"action ({post})"})
    return nodes, kept, value, entries


def _continuous_action(graph: Any, source: str, post: str, action_space: Box, batch_dim: Any) -> ActionNodes:
    """The nodes from a continuous policy's `source` output to a float32 `action` (clipped, squashed or
    rescaled to the bounds, or as it is)."""
    from onnx import TensorProto, helper, numpy_helper

    nodes, entries = [], []
    low = np.asarray(action_space.low, np.float32)
    high = np.asarray(action_space.high, np.float32)
    nodes.append(helper.make_node("Cast", [source], ["thrust_raw_float"], to=TensorProto.FLOAT))
    last = "thrust_raw_float"
    if post == "clip":
        bounds = [numpy_helper.from_array(low, "thrust_action_low"), numpy_helper.from_array(high, "thrust_action_high")]
        graph.initializer.extend(bounds)
        nodes.append(helper.make_node("Max", [last, "thrust_action_low"], ["thrust_clipped_low"]))
        nodes.append(helper.make_node("Min", ["thrust_clipped_low", "thrust_action_high"], [ACTION]))
    elif post in ("tanh", "rescale"):
        if post == "tanh":
            nodes.append(helper.make_node("Tanh", [last], ["thrust_squashed"]))
            last = "thrust_squashed"
        # low + (x + 1) / 2 * (high - low) = x * half_range + middle
        half_range, middle = 0.5 * (high - low), 0.5 * (high + low)
        graph.initializer.extend(
            [numpy_helper.from_array(half_range, "thrust_half_range"), numpy_helper.from_array(middle, "thrust_middle")]
        )
        nodes.append(helper.make_node("Mul", [last, "thrust_half_range"], ["thrust_scaled"]))
        nodes.append(helper.make_node("Add", ["thrust_scaled", "thrust_middle"], [ACTION]))
    else:
        nodes.append(helper.make_node("Identity", [last], [ACTION]))
    value = helper.make_tensor_value_info(ACTION, TensorProto.FLOAT, [batch_dim, *action_space.shape])
    entries.append(
        {"name": ACTION, "dtype": "float32", "shape": [batch_dim, *action_space.shape], "meaning": f"action ({post})"}
    )
    return nodes, [], value, entries


def add_action_output(model: Any, source: str, post: str, action_space: Box | Discrete) -> tuple[str, list[dict[str, Any]]]:
    """Append post-processing from output `source` (a name, or a position such as "0") to a new `action`
    output, in place; the graph keeps only the outputs a bundle uses. Returns the source output's name
    and the manifest's `outputs` entries."""
    graph = model.graph
    names = [output.name for output in graph.output]
    if source not in names and source.isdigit() and int(source) < len(names):  # by position: "0" is the first
        source = names[int(source)]
    if source not in names:
        raise BundleError(
            f"the model has no output '{source}'; its outputs are {names}: pass --action-output NAME (or 0 for the first)"
        )
    check_choice(post, action_space)
    source_name = source
    if source == ACTION:  # the new output takes the name; the source tensor gets another
        source = "thrust_source_action"
        _rename_tensor(graph, ACTION, source)
    batch = graph.input[0].type.tensor_type.shape.dim[0]
    batch_dim = batch.dim_param or batch.dim_value or "batch"
    build = _discrete_action if isinstance(action_space, Discrete) else _continuous_action
    nodes, kept, value, entries = build(graph, source, post, action_space, batch_dim)
    graph.node.extend(nodes)
    del graph.output[:]
    graph.output.extend([*kept, value])
    return source_name, entries
