"""A JAX function as an ONNX model: a small converter from its jaxpr, for the primitives a
policy's deterministic action uses (dense layers, activations, normalization, clipping and
scaling, argmax).

It writes what the traced program computes, one ONNX node (or a few) per primitive, with the
jaxpr's constants (the network's parameters, the observation statistics) as initializers and
one symbolic batch dimension. Calls (``jit``, ``custom_jvp_call``, ...) are inlined and
unused equations (the deterministic action's PRNG key) dropped. A primitive it does not know
raises :class:`UnsupportedPrimitive` naming it: no model is written that computes something
else. It needs the ``onnx`` package (``pip install 'jaxrl[export]'``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import jax
import numpy as np
from jax.extend.core import Literal

OPSET = 17
BATCH = "batch"
# Primitives that call a jaxpr: inlined (the parameter that holds it, in order of preference).
_CALLS = ("jit", "pjit", "closed_call", "core_call", "custom_jvp_call", "custom_vjp_call",
          "custom_vjp_call_jaxpr", "remat", "checkpoint", "custom_lin")  # fmt: skip
_CALL_PARAMS = ("jaxpr", "call_jaxpr", "fun_jaxpr")
_ELEMENTWISE = {
    "add": "Add", "sub": "Sub", "mul": "Mul", "div": "Div", "max": "Max", "min": "Min",
    "pow": "Pow", "tanh": "Tanh", "exp": "Exp", "log": "Log", "sqrt": "Sqrt", "neg": "Neg",
    "abs": "Abs", "sign": "Sign", "logistic": "Sigmoid", "erf": "Erf", "floor": "Floor",
    "ceil": "Ceil", "eq": "Equal", "lt": "Less", "gt": "Greater", "le": "LessOrEqual",
    "ge": "GreaterOrEqual", "and": "And", "or": "Or", "not": "Not", "copy": "Identity",
    "copy_p": "Identity", "stop_gradient": "Identity", "sin": "Sin", "cos": "Cos",
}  # fmt: skip
_REDUCE = {"reduce_sum": "ReduceSum", "reduce_max": "ReduceMax", "reduce_min": "ReduceMin"}


class UnsupportedPrimitive(ValueError):
    """The function uses a primitive the converter has no ONNX translation of."""


def _onnx() -> Any:
    try:
        import onnx
    except ImportError:
        raise ImportError(
            "ONNX export needs the onnx package: pip install 'jaxrl[export]'"
        ) from None
    return onnx


def _is_static(dim: Any) -> bool:
    return isinstance(dim, (int, np.integer))


def _dims(shape: Sequence[Any]) -> list[int | str]:
    return [int(d) if _is_static(d) else BATCH for d in shape]


class _Graph:
    """The ONNX nodes, initializers and names being built."""

    def __init__(self) -> None:
        self.onnx = _onnx()
        self.nodes: list[Any] = []
        self.initializers: list[Any] = []
        self.count = 0

    def name(self, hint: str = "v") -> str:
        self.count += 1
        return f"{hint}_{self.count}"

    def const(self, value: Any, hint: str = "c") -> str:
        name = self.name(hint)
        array = np.asarray(value)
        self.initializers.append(self.onnx.numpy_helper.from_array(array, name))
        return name

    def node(self, op: str, inputs: Sequence[str], **attrs: Any) -> str:
        out = self.name(op.lower())
        self.nodes.append(self.onnx.helper.make_node(op, list(inputs), [out], **attrs))
        return out


def _tensor_type(dtype: Any) -> int:
    return _onnx().helper.np_dtype_to_tensor_dtype(np.dtype(dtype))


def _reshape_target(shape: Sequence[Any]) -> np.ndarray:
    """An ONNX Reshape's shape: static dimensions as they are, the batch dimension -1."""
    if sum(not _is_static(d) for d in shape) > 1:
        raise UnsupportedPrimitive("reshape with more than one symbolic dimension")
    return np.asarray([int(d) if _is_static(d) else -1 for d in shape], np.int64)


def _dot_general(graph: _Graph, eqn: Any, lhs: str, rhs: str) -> str:
    (lc, rc), (lb, rb) = eqn.params["dimension_numbers"]
    lrank, rrank = len(eqn.invars[0].aval.shape), len(eqn.invars[1].aval.shape)
    if not lb and not rb and tuple(lc) == (lrank - 1,) and tuple(rc) == (0,) and rrank == 2:
        out = graph.node("MatMul", [lhs, rhs])
    else:  # the general contraction as an einsum
        letters = iter("abcdefghijklmnopqrstuvwxyz")
        left = [next(letters) for _ in range(lrank)]
        right = [next(letters) for _ in range(rrank)]
        for i, j in zip(list(lc) + list(lb), list(rc) + list(rb), strict=True):
            right[j] = left[i]
        batch = [left[i] for i in lb]
        free_l = [left[i] for i in range(lrank) if i not in lc and i not in lb]
        free_r = [right[j] for j in range(rrank) if j not in rc and j not in rb]
        equation = f"{''.join(left)},{''.join(right)}->{''.join(batch + free_l + free_r)}"
        out = graph.node("Einsum", [lhs, rhs], equation=equation)
    wanted = eqn.outvars[0].aval.dtype
    if np.dtype(wanted) != np.result_type(eqn.invars[0].aval.dtype, eqn.invars[1].aval.dtype):
        out = graph.node("Cast", [out], to=_tensor_type(wanted))
    return out


def _broadcast_in_dim(graph: _Graph, eqn: Any, x: str) -> str:
    """The operand reshaped to the output's rank (its dimensions where
    ``broadcast_dimensions`` put them, 1 elsewhere), then expanded to the static dimensions
    of the output; a symbolic (batch) dimension is left 1 for the consumers' broadcasting."""
    shape = eqn.params["shape"]
    operand = eqn.invars[0].aval.shape
    ranked = [1] * len(shape)
    for source, target in enumerate(eqn.params["broadcast_dimensions"]):
        ranked[target] = operand[source]
    x = graph.node("Reshape", [x, graph.const(_reshape_target(ranked), "shape")])
    expand = np.asarray([int(d) if _is_static(d) else 1 for d in shape], np.int64)
    return graph.node("Expand", [x, graph.const(expand, "shape")])


def _emit(graph: _Graph, eqn: Any, args: list[str]) -> list[str]:
    """The ONNX names of ``eqn``'s outputs, its nodes added to ``graph``."""
    prim, params = eqn.primitive.name, eqn.params
    if prim in _ELEMENTWISE:
        return [graph.node(_ELEMENTWISE[prim], args)]
    if prim == "dot_general":
        return [_dot_general(graph, eqn, *args)]
    if prim == "convert_element_type":
        return [graph.node("Cast", args, to=_tensor_type(params["new_dtype"]))]
    if prim == "reshape":
        if params.get("dimensions") is not None:
            raise UnsupportedPrimitive("reshape with dimensions (a transposing reshape)")
        target = graph.const(_reshape_target(params["new_sizes"]), "shape")
        return [graph.node("Reshape", [args[0], target])]
    if prim == "squeeze":
        target = graph.const(_reshape_target(eqn.outvars[0].aval.shape), "shape")
        return [graph.node("Reshape", [args[0], target])]
    if prim == "broadcast_in_dim":
        return [_broadcast_in_dim(graph, eqn, args[0])]
    if prim == "transpose":
        return [graph.node("Transpose", args, perm=list(params["permutation"]))]
    if prim == "integer_pow":
        exponent = graph.const(np.asarray(params["y"], eqn.invars[0].aval.dtype))
        return [graph.node("Pow", [args[0], exponent])]
    if prim == "rsqrt":
        return [graph.node("Reciprocal", [graph.node("Sqrt", args)])]
    if prim == "square":
        return [graph.node("Mul", [args[0], args[0]])]
    if prim == "clamp":  # lax.clamp(min, x, max)
        return [graph.node("Min", [graph.node("Max", [args[1], args[0]]), args[2]])]
    if prim == "select_n":
        if len(args) != 3:
            raise UnsupportedPrimitive("select_n of more than two cases")
        predicate = args[0]
        if np.dtype(eqn.invars[0].aval.dtype) != np.bool_:
            predicate = graph.node("Cast", [predicate], to=_tensor_type(np.bool_))
        return [graph.node("Where", [predicate, args[2], args[1]])]
    if prim == "argmax":
        (axis,) = params["axes"]
        out = graph.node("ArgMax", args, axis=int(axis), keepdims=0)
        return [graph.node("Cast", [out], to=_tensor_type(params["index_dtype"]))]
    if prim in _REDUCE:
        axes = graph.const(np.asarray(params["axes"], np.int64), "axes")
        if prim == "reduce_sum":
            return [graph.node("ReduceSum", [args[0], axes], keepdims=0)]
        return [graph.node(_REDUCE[prim], [args[0]], axes=list(params["axes"]), keepdims=0)]
    if prim == "concatenate":
        return [graph.node("Concat", args, axis=int(params["dimension"]))]
    raise UnsupportedPrimitive(
        f"ONNX export does not know the JAX primitive {prim!r} (jaxrl.runs.jaxpr_onnx "
        "converts what NPG's, TRPO's and DDPG's policies use); export the JAX program "
        "instead (--format jax)"
    )


def _inner(eqn: Any) -> tuple[Any, list[Any]] | None:
    """``(jaxpr, consts)`` a call-like equation runs, or None."""
    if eqn.primitive.name not in _CALLS:
        return None
    for key in _CALL_PARAMS:
        if key in eqn.params:
            closed = eqn.params[key]
            if hasattr(closed, "jaxpr") and hasattr(closed, "consts"):
                return closed.jaxpr, list(closed.consts)
            return closed, []
    raise UnsupportedPrimitive(f"{eqn.primitive.name} without a jaxpr to inline")


def _live(jaxpr: Any) -> list[bool]:
    """Which equations of ``jaxpr`` its outputs need (the rest are dropped)."""
    needed = {v for v in jaxpr.outvars if not isinstance(v, Literal)}
    live = [False] * len(jaxpr.eqns)
    for index in reversed(range(len(jaxpr.eqns))):
        eqn = jaxpr.eqns[index]
        if any(v in needed for v in eqn.outvars):
            live[index] = True
            needed.update(v for v in eqn.invars if not isinstance(v, Literal))
    return live


def _convert(graph: _Graph, jaxpr: Any, consts: list[Any], inputs: list[str]) -> list[str]:
    env: dict[Any, str] = {}
    unread = dict(zip(jaxpr.constvars, consts, strict=True))  # initializers once read

    def read(v: Any) -> str:
        if isinstance(v, Literal):
            return graph.const(np.asarray(v.val, v.aval.dtype), "literal")
        if v in unread:
            env[v] = graph.const(np.asarray(unread.pop(v)), "param")
        return env[v]

    for var, name in zip(jaxpr.invars, inputs, strict=True):
        env[var] = name
    for eqn, live in zip(jaxpr.eqns, _live(jaxpr), strict=True):
        if not live:
            continue
        args = [read(v) for v in eqn.invars]
        inner = _inner(eqn)
        outs = _convert(graph, *inner, args) if inner else _emit(graph, eqn, args)
        for var, name in zip(eqn.outvars, outs, strict=True):
            env[var] = name
    return [read(v) for v in jaxpr.outvars]


def to_onnx(fn: Callable, example: jax.ShapeDtypeStruct, name: str = "policy") -> Any:
    """The ONNX model (``onnx.ModelProto``, opset 17) of ``fn`` for inputs like ``example``,
    whose leading dimension is the symbolic batch dimension (``jax.export.symbolic_shape``)
    or a static one; the input is named ``obs`` and the output ``action``.

    Raises:
      UnsupportedPrimitive: ``fn`` uses a primitive the converter does not translate.
      ImportError: no ``onnx`` package.
    """
    onnx = _onnx()
    closed = jax.make_jaxpr(fn)(example)
    graph = _Graph()
    (out,) = _convert(graph, closed.jaxpr, list(closed.consts), ["obs"])
    (aval,) = closed.out_avals
    graph.nodes.append(onnx.helper.make_node("Identity", [out], ["action"]))
    inputs = [
        onnx.helper.make_tensor_value_info("obs", _tensor_type(example.dtype), _dims(example.shape))
    ]
    outputs = [
        onnx.helper.make_tensor_value_info("action", _tensor_type(aval.dtype), _dims(aval.shape))
    ]
    model = onnx.helper.make_model(
        onnx.helper.make_graph(graph.nodes, name, inputs, outputs, graph.initializers),
        opset_imports=[onnx.helper.make_opsetid("", OPSET)],
        producer_name="jaxrl",
    )
    model.ir_version = min(model.ir_version, 10)  # what onnxruntime releases read
    onnx.checker.check_model(model)
    return model
