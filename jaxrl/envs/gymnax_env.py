"""gymnax, imported without what it imports only to draw (``import_gymnax``): the
module both JAX environment adapters (:mod:`jaxrl.envs.jax_envs`, :mod:`jaxrl.envs.brax_env`)
take gymnax from."""

from __future__ import annotations

import contextlib
import importlib
import sys
import types
from collections.abc import Iterator
from typing import Any

# What gymnax imports only to render (Pong's and MinAtar's figures): seaborn pulls in
# scipy.stats; together they are half of gymnax's import time.
_RENDERING_MODULES = ("seaborn", "matplotlib.pyplot")


class _Deferred(types.ModuleType):
    """Stands in for a module until one of its attributes is read, then imports it."""

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):  # what the import system asks of any module
            raise AttributeError(name)
        if sys.modules.get(self.__name__) is self:
            del sys.modules[self.__name__]
        return getattr(importlib.import_module(self.__name__), name)


@contextlib.contextmanager
def _deferring(names: tuple[str, ...]) -> Iterator[None]:
    """Within the block, importing one of ``names`` not yet imported binds a
    :class:`_Deferred` in its place; after it, importing them imports them."""
    placed = [name for name in names if name not in sys.modules]
    for name in placed:
        sys.modules[name] = _Deferred(name)
    try:
        yield
    finally:
        for name in placed:
            if isinstance(sys.modules.get(name), _Deferred):
                del sys.modules[name]


def import_gymnax() -> types.ModuleType:
    """``gymnax``, imported without its rendering modules (seaborn, pyplot): they are
    imported when a figure of gymnax's first uses them. A process that steps gymnax
    environments starts most of a second sooner."""
    if "gymnax" not in sys.modules:
        with _deferring(_RENDERING_MODULES):
            importlib.import_module("gymnax")
    return sys.modules["gymnax"]
