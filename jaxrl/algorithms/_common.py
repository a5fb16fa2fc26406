"""Pieces shared by the algorithm objects: hyperparameter fields and their checks, 1.x
aliases, the spaces and train states every algorithm builds, acting's action mapping and the
optimizers."""

from __future__ import annotations

import dataclasses
import functools
import math
import numbers
import textwrap
import types
import typing
import warnings
from collections.abc import Callable
from typing import Any, Literal

import jax
import jax.numpy as jnp
import numpy as np
import optax
from flax import struct
from flax.training.train_state import TrainState

from jaxrl.core._checks import check_in_range, check_int
from jaxrl.core.actions import map_action
from jaxrl.core.tree import all_finite, tree_select
from jaxrl.networks import stable_apply
from jaxrl.spaces import SpaceSpec, describe_space

Schedule = Callable[[jax.Array], jax.Array]


@functools.cache
def linear_schedule(num_updates: int) -> Schedule:
    """Learning-rate multiplier decaying linearly from 1 to 0 over ``num_updates`` updates
    (Tianshou's MuJoCo ``LambdaLR`` schedule). One function per length: agents with the same
    schedule have equal static fields, so they share compiled programs."""
    total = max(1, int(num_updates))
    return lambda count: jnp.maximum(0.0, 1.0 - count / total)


def hyperparameter(
    default: Any,
    help: str,
    *,
    static: bool = False,
    low: float | None = None,
    high: float = math.inf,
    low_open: bool = False,
    high_open: bool = False,
) -> Any:
    """An algorithm's hyperparameter field: a pytree leaf (``jax.vmap`` can sweep it) unless
    ``static`` (it fixes shapes or control flow); ``help`` describes it in a sentence or two,
    read by :func:`document_fields` (and by the command line, whose help is its first
    sentence: :func:`jaxrl.config.hyperparameters`). ``low`` and ``high`` bound its value,
    excluded where ``low_open``, ``high_open`` (:func:`~jaxrl.algorithms.check_bounds`; a
    field typed ``int`` must be an integer ``>= low``)."""
    metadata: dict[str, Any] = {"help": help}
    if low is not None:
        metadata["bounds"] = (low, high, low_open, high_open)
    return struct.field(pytree_node=not static, default=default, metadata=metadata)


def check_bounds(algorithm: Any) -> None:
    """Raise naming ``Class.field`` where a concrete value is not what its
    :func:`hyperparameter` field declares. ``ValueError``: outside its bounds
    (:func:`jaxrl.core._checks.check_in_range`), or not one of the values of a static field
    typed ``Literal[...]``. ``TypeError``: a static field's value not of its type (a bool for
    ``bool``, an int for ``int``, a number but no bool for ``float``, a callable for
    ``Callable``, an instance of any other class; None where the type allows it), or no
    number in a field with bounds. Traced leaves are skipped, and so are the placeholders
    (None, ``object()``) JAX rebuilds pytrees with."""
    owner, hints = type(algorithm).__name__, _type_hints(type(algorithm))
    for field in dataclasses.fields(algorithm):
        if "help" not in field.metadata:
            continue
        value, hint = getattr(algorithm, field.name), hints[field.name]
        name, leaf = f"{owner}.{field.name}", field.metadata["pytree_node"]
        rule = None if leaf else _static_rule(hint)
        if rule is not None and not rule[0](value):
            raise rule[2](f"{name} must be {rule[1]}, got {value!r}")
        if "bounds" not in field.metadata:
            continue
        low, high, low_open, high_open = field.metadata["bounds"]
        members = typing.get_args(hint) if typing.get_origin(hint) in _UNIONS else (hint,)
        placeholder = value is None or type(value) is object
        if int in members:
            check_int(name, value, low=low, optional=type(None) in members)
        elif isinstance(value, str) or (not leaf and (placeholder or isinstance(value, bool))):
            raise TypeError(f"{name} must be a number, got {value!r}")
        elif not placeholder:
            check_in_range(name, value, low, high, low_open=low_open, high_open=high_open)


@functools.cache
def _static_rule(hint: Any) -> tuple[Callable[[Any], bool], str, type[Exception]] | None:
    """``(accepts, words, error)`` for a static field typed ``hint`` (None: no rule), made
    once per type: JAX rebuilds an algorithm, and so checks it, whenever it unflattens it."""
    members = typing.get_args(hint) if typing.get_origin(hint) in _UNIONS else (hint,)
    optional = type(None) in members
    kinds = [Callable if typing.get_origin(m) is Callable else m for m in members]
    kinds = [m for m in kinds if m is not type(None)]
    if kinds and all(typing.get_origin(m) is Literal for m in kinds):
        allowed = [a for m in kinds for a in typing.get_args(m)] + [None] * optional
        words = "one of " + ", ".join(map(repr, allowed))
        return (lambda v: any(type(v) is type(a) and v == a for a in allowed)), words, ValueError
    if kinds and all(isinstance(m, type) for m in kinds):
        accepted = tuple(_INSTANCES.get(m, m) for m in kinds)
        parts = [w for m in kinds for w in _WORDS.get(m, [f"a {m.__name__}"])] + ["None"] * optional
        words = " or ".join([", ".join(parts[:-1]), parts[-1]] if len(parts) > 1 else parts)

        def accepts(v: Any) -> bool:
            exact = bool in kinds or not isinstance(v, bool)  # a bool is an int to isinstance
            return optional if v is None else isinstance(v, accepted) and exact

        return accepts, words, TypeError
    return None


# What a static field typed by one of these classes may hold, and how an error names it.
_INSTANCES = {bool: (bool, np.bool_), int: numbers.Integral, float: numbers.Real}
# (in the words of jaxrl.core._checks: check_bool's, check_int's, check_in_range's)
_WORDS = {bool: ["True", "False"], int: ["an integer"], float: ["a number"], Callable: ["callable"]}


_UNIONS = (typing.Union, types.UnionType)
_type_hints = functools.cache(typing.get_type_hints)


def field_help(field: dataclasses.Field) -> str:
    """The ``help`` of a :func:`hyperparameter` field ("" for other fields)."""
    return field.metadata.get("help", "")


def document_fields(cls: type) -> type:
    """Class decorator: append the descriptions of the class's :func:`hyperparameter` fields
    (inherited ones included) to its docstring, leaves and static fields apart."""
    groups: dict[str, list[str]] = {"Learning leaves": [], "Static structure": []}
    for field in dataclasses.fields(cls):
        if field_help(field):
            group = "Learning leaves" if field.metadata["pytree_node"] else "Static structure"
            text = textwrap.fill(
                f"{field.name}: {field_help(field)}.",
                width=88,
                initial_indent="      ",
                subsequent_indent="        ",
            )
            groups[group].append(text)
    sections = [f"    {title}:\n" + "\n".join(lines) for title, lines in groups.items() if lines]
    cls.__doc__ = (cls.__doc__ or "").rstrip() + "\n\n" + "\n\n".join(sections) + "\n    "
    return cls


def accept_aliases(
    aliases: dict[str, str], ignored: dict[str, str] | None = None
) -> Callable[[type], type]:
    """Class decorator: let ``__init__`` take Tianshou 1.x keyword names as aliases, and
    accept (with a warning saying why) the keywords in ``ignored``: ``name -> reason``,
    Tianshou arguments the algorithm takes for parity and does not use."""
    ignored = dict(ignored or {})

    def decorate(cls: type) -> type:
        original_init = cls.__init__

        @functools.wraps(original_init)
        def __init__(self: Any, *args: Any, **kwargs: Any) -> None:
            for old, new in aliases.items():
                if old in kwargs:
                    if new in kwargs:
                        raise TypeError(
                            f"{cls.__name__}: pass {new} or its 1.x alias {old}, not both"
                        )
                    kwargs[new] = kwargs.pop(old)
            for name, reason in ignored.items():
                if name in kwargs:
                    kwargs.pop(name)
                    warnings.warn(f"{cls.__name__} ignores {name}: {reason}", stacklevel=2)
            original_init(self, *args, **kwargs)

        cls.__init__ = __init__
        cls.ALIASES = dict(aliases)
        cls.IGNORED = dict(ignored)
        return cls

    return decorate


@functools.cache
def adam_with_injected_lr() -> optax.GradientTransformation:
    """Adam whose learning rate is optimizer state (set per update; no recompilation).

    Cached so every agent shares one transformation object: train states built by different
    ``init`` calls have equal static data and hit the same compiled ``update``.
    """
    return optax.inject_hyperparams(optax.adam)(learning_rate=1e-3)


@functools.cache
def no_optimizer() -> optax.GradientTransformation:
    """Placeholder for parameters updated by hand (the natural-gradient actor)."""
    return optax.set_to_zero()


def scheduled_learning_rate(lr: Any, schedule: Schedule | None, count: jax.Array) -> jax.Array:
    """``lr * schedule(count)``: ``schedule`` is a multiplier of the number of updates so far
    (Tianshou's ``LambdaLR``-style ``lr_scheduler``, stepped once per update)."""
    factor = 1.0 if schedule is None else schedule(count)
    return jnp.asarray(lr, jnp.float32) * factor


def set_learning_rate(opt_state: Any, learning_rate: jax.Array) -> Any:
    """Return ``opt_state`` of :func:`adam_with_injected_lr` with a new learning rate."""
    hyperparams = dict(opt_state.hyperparams)
    hyperparams["learning_rate"] = jnp.asarray(
        learning_rate, jnp.asarray(opt_state.hyperparams["learning_rate"]).dtype
    )
    return opt_state._replace(hyperparams=hyperparams)


def guarded_gradient_step(
    train_state: Any,
    loss: jax.Array,
    grads: Any,
    finite_test: Callable[[Any], jax.Array] = all_finite,
) -> tuple[Any, jax.Array]:
    """``train_state.apply_gradients(grads)`` unless the loss, the gradients or the new
    parameters are non-finite; then the state (parameters and optimizer state) is kept.
    ``finite_test`` tests a tree (:func:`jaxrl.core.tree.all_finite`, or
    :func:`jaxrl.core.tree.all_finite_by_leaf` in the off-policy steps).

    Returns ``(new_state, rejected)`` with ``rejected`` an int32 0/1 for the stats.
    """
    stepped = train_state.apply_gradients(grads=grads)
    finite = jnp.isfinite(loss) & finite_test(grads) & finite_test(stepped.params)
    return tree_select(finite, stepped, train_state), (~finite).astype(jnp.int32)


# ---------------------------------------------------------------------------------------------
# What every algorithm checks and builds
# ---------------------------------------------------------------------------------------------


def check_structure(agent: Any) -> None:
    """The check of the ``hidden_sizes`` field NPG, TRPO and DDPG share: a list becomes a
    tuple; positive ints, one per hidden layer (the other fields are checked against their
    types: :func:`check_bounds`). Call it from ``__post_init__``."""
    owner = type(agent).__name__
    sizes = agent.hidden_sizes
    if isinstance(sizes, list):
        object.__setattr__(agent, "hidden_sizes", sizes := tuple(sizes))
    if not isinstance(sizes, tuple) or not all(type(h) is int and h > 0 for h in sizes):
        raise (ValueError if isinstance(sizes, tuple) else TypeError)(
            f"{owner}.hidden_sizes must be a list of positive integers, one per hidden layer "
            f"([64, 64]), got {sizes!r}"
        )


def check_spaces(
    observation_space: Any, action_space: Any, algorithm: str, *, discrete: bool
) -> tuple[SpaceSpec, SpaceSpec]:
    """Both spaces described (:func:`jaxrl.spaces.describe_space`): the observations a Box,
    the actions a 1-D Box or, where ``discrete``, a Discrete; ``TypeError``/``ValueError``
    naming the space otherwise."""
    obs_space = describe_space(observation_space, "observation_space")
    if obs_space.kind != "box":
        raise TypeError(f"observation_space must be a Box, got {obs_space.describe()}")
    act_space = describe_space(action_space, "action_space")
    if act_space.kind != "box" and not discrete:
        raise TypeError(
            f"{algorithm} needs a continuous Box action_space, got {act_space.describe()}: "
            "it has no discrete actions (NPG and TRPO have)"
        )
    if act_space.kind == "box" and len(act_space.shape) != 1:
        raise ValueError(f"action_space must be a 1-D Box, got shape {act_space.shape}")
    return obs_space, act_space


def action_bounds(act_space: SpaceSpec, action_scaling: bool) -> tuple[jax.Array, jax.Array]:
    """``(low, high)`` of a Box action space as arrays ``[A]`` (zeros ``[]`` for a Discrete
    one); scaling needs finite bounds (``ValueError`` otherwise)."""
    if act_space.kind != "box":
        return jnp.zeros((), jnp.float32), jnp.zeros((), jnp.float32)
    low, high = act_space.low_array, act_space.high_array
    if action_scaling and not (np.all(np.isfinite(low)) and np.all(np.isfinite(high))):
        raise ValueError(
            "action_scaling=True needs a Box action_space with finite bounds; "
            "pass action_scaling=False"
        )
    return jnp.asarray(low), jnp.asarray(high)


def new_train_state(
    module: Any, key: jax.Array, inputs: tuple[jax.Array, ...], lr: Any = None
) -> TrainState:
    """A ``TrainState`` of ``module`` initialized on ``inputs``: with Adam at learning rate
    ``lr`` (:func:`adam_with_injected_lr`), or with no optimizer when ``lr`` is None
    (parameters updated by hand). Its counters are strongly typed: the state an update
    returns must match this one exactly, or ``jax.jit(update)`` would compile a second time."""
    state = TrainState.create(
        apply_fn=stable_apply(module),
        params=module.init(key, *inputs),
        tx=no_optimizer() if lr is None else adam_with_injected_lr(),
    )
    state = state.replace(step=jnp.zeros((), jnp.int32))
    if lr is None:
        return state
    return state.replace(opt_state=set_learning_rate(state.opt_state, lr))


def check_state(owner: str, state: Any, expected: type) -> None:
    """``TypeError`` naming ``owner`` unless ``state`` is an ``expected``, the train state
    the algorithm's ``init`` returns (a check of the Python type: free under ``jit``)."""
    if not isinstance(state, expected):
        init, got = owner.split(".")[0] + ".init", type(state).__name__
        raise TypeError(f"{owner}: state must be the {expected.__name__} {init} returns, got {got}")


def observations(state: Any, obs: Any, owner: str, state_type: type) -> jax.Array:
    """``obs [..., *obs_shape]`` as float32; ``TypeError`` naming ``owner`` unless ``state``
    is a ``state_type``, ``ValueError`` unless ``obs`` 's trailing axes are ``state`` 's
    observation shape (checked when traced: shapes are static, so a jitted call pays
    nothing)."""
    check_state(owner, state, state_type)
    obs = jnp.asarray(obs, jnp.float32)
    shape = tuple(state.observation_space.shape)
    if obs.ndim < len(shape) or obs.shape[obs.ndim - len(shape) :] != shape:
        raise ValueError(
            f"{owner}: obs must have shape [..., {', '.join(map(str, shape))}] (the "
            f"observation space's), got {list(obs.shape)}"
        )
    return obs


def to_env_action(state: Any, action: jax.Array, agent: Any) -> jax.Array:
    """Raw actions bounded (``agent.action_bound_method``) and scaled
    (``agent.action_scaling``) to ``state`` 's Box bounds; Discrete actions pass through."""
    if state.action_space.kind == "discrete":
        return action
    return map_action(
        action,
        state.action_low,
        state.action_high,
        agent.action_scaling,
        agent.action_bound_method,
    )
