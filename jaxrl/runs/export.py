"""A trained policy as a file that runs without jaxrl (``jaxrl export``): one seed's
deterministic action, ``obs [batch, *observation_shape] -> action [batch, ...]`` in the
environment's units, the run's observation normalization and the agent's action bounding
and scaling folded in, with a symbolic batch dimension.

- ``jax``: JAX's serialized program (:mod:`jax.export`) for the CPU and CUDA; read it with
  ``jax.export.deserialize(bytearray(data)).call(obs)`` (JAX only).
- ``onnx``: an ONNX model (input ``obs``, output ``action``, float32) for onnxruntime and
  other ONNX runtimes, written by :mod:`jaxrl.runs.jaxpr_onnx` (``pip install
  'jaxrl[export]'``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

import jax
import jax.numpy as jnp

from jaxrl.runs.policy import Policy

Format = Literal["jax", "onnx"]
SUFFIXES: dict[str, str] = {"jax": ".jax", "onnx": ".onnx"}


def _example(policy: Policy) -> jax.ShapeDtypeStruct:
    (batch,) = jax.export.symbolic_shape("batch")
    return jax.ShapeDtypeStruct((batch, *policy.observation_shape), jnp.float32)


def _platforms() -> tuple[str, ...]:
    """The CPU, and CUDA where this JAX can lower for it."""
    try:
        jax.export.export(jax.jit(jnp.sin), platforms=("cpu", "cuda"))(
            jax.ShapeDtypeStruct((1,), jnp.float32)
        )
    except Exception:  # a JAX without CUDA lowering: the CPU alone
        return ("cpu",)
    return ("cpu", "cuda")


def export_jax(policy: Policy) -> bytes:
    """The serialized :mod:`jax.export` program of ``policy``'s deterministic action."""
    exported = jax.export.export(jax.jit(policy.action_function()), platforms=_platforms())
    return bytes(exported(_example(policy)).serialize())


def export_onnx(policy: Policy) -> bytes:
    """The ONNX model of ``policy``'s deterministic action
    (:func:`jaxrl.runs.jaxpr_onnx.to_onnx`)."""
    from jaxrl.runs.jaxpr_onnx import to_onnx

    with jax.default_matmul_precision("highest"):
        model = to_onnx(policy.action_function(), _example(policy), f"{policy.config.algo}_policy")
    return model.SerializeToString()


def export_format(path: str | Path, format: Format | None = None) -> Format:
    """The format a policy written to ``path`` takes: ``format``, or without it the one
    ``path`` 's suffix names (``.onnx`` or ``.jax``). ``ValueError`` naming the path where
    neither says one, or where the suffix names the other format."""
    named = {suffix: name for name, suffix in SUFFIXES.items()}.get(Path(path).suffix)
    if format is None and named is None:
        raise ValueError(f"{path}: name a .onnx or .jax file, or give the format (onnx or jax)")
    if format is not None and format not in SUFFIXES:
        raise ValueError(f"format must be 'jax' or 'onnx', got {format!r}")
    if format is not None and named not in (None, format):
        raise ValueError(f"{path}: its suffix names {named}, not {format}")
    return format or named


def export_policy(policy: Policy, path: str | Path, format: Format | None = None) -> Path:
    """Write ``policy`` (one seed's: :func:`jaxrl.runs.policy.load` with ``seed=i``) to
    ``path`` as ``format`` (default: from the suffix, ``.onnx`` or ``.jax``). Returns the path.

    Raises:
      TypeError: ``policy`` is no :class:`~jaxrl.runs.policy.Policy`.
      ValueError: an unknown format, a path whose suffix names no format (without
        ``format``) or the other one, or a policy of every seed.
      jaxrl.runs.jaxpr_onnx.UnsupportedPrimitive: ONNX of a policy using a primitive the
        converter does not translate.
      ImportError: ONNX without the ``onnx`` package.
    """
    if not isinstance(policy, Policy):
        raise TypeError(
            f"policy must be a jaxrl.Policy (jaxrl.load(run_dir, seed=i)), got "
            f"{type(policy).__name__} {policy!r:.80}"
        )
    path = Path(path)
    format = export_format(path, format)
    data = export_onnx(policy) if format == "onnx" else export_jax(policy)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    return path
