"""Algorithms from outside the package: plug-ins that register themselves when imported.

A plug-in is a Python file (``examples/td3.py``) or an importable module
(``mypackage.td3``) that calls :func:`jaxrl.algorithms.registry.register` at import.
:func:`load_plugin` imports one and returns the names it registered; the ``jaxrl`` command
loads every ``--plugin FILE_OR_MODULE`` it is given (the option may come anywhere, and
repeat) and those listed in the ``JAXRL_PLUGINS`` environment variable (separated by
``os.pathsep``) before it reads the algorithm name, for every command (``evaluate`` and
``--resume`` of a plug-in's run need it loaded again)::

    jaxrl train td3 --plugin examples/td3.py --env Pendulum-v1
    JAXRL_PLUGINS=examples/td3.py jaxrl evaluate runs/td3-...
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from jaxrl.algorithms import registry

ENV_VAR = "JAXRL_PLUGINS"

# Loaded plug-ins, by resolved file path or module name: what each registered. Loading one
# again registers that again (where it was unregistered or replaced since) without importing
# it again, so its classes stay the same objects.
_LOADED: dict[str, tuple[registry.AlgorithmInfo, ...]] = {}


class PluginError(ValueError):
    """A plug-in that cannot be loaded or registers no algorithm (one line naming it)."""


def _is_file(spec: str) -> bool:
    return spec.endswith(".py") or os.sep in spec or (os.altsep or os.sep) in spec


def _module_name(path: Path) -> str:
    return f"jaxrl_plugin_{path.stem}"


def _import_file(path: Path) -> None:
    """Import the file at ``path`` as module ``jaxrl_plugin_<stem>`` (kept in
    ``sys.modules``, so its classes' type hints resolve)."""
    name = _module_name(path)
    if name in sys.modules:
        raise ImportError(f"another plug-in file named {path.name} is already loaded")
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise ImportError("not a Python file")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except BaseException:
        del sys.modules[name]
        raise


def load_plugin(spec: str | os.PathLike) -> tuple[str, ...]:
    """Import the plug-in ``spec`` (a ``.py`` file path, or a module name) and return the
    names of the algorithms it registered (added or replaced), in name order.

    Raises:
      jaxrl.algorithms.plugins.PluginError: naming ``spec``, when the file is missing,
        raises on import, or registers no algorithm.
      TypeError: ``spec`` neither a path nor a str.
    """
    from jaxrl.algorithms import registry  # the built-in algorithms: JAX (not for plugins_from_env)

    if not isinstance(spec, str | os.PathLike):
        raise TypeError(
            f"a plug-in is a .py file or a module name, got {type(spec).__name__} {spec!r:.60}"
        )
    text = os.fspath(spec)
    is_file = isinstance(spec, os.PathLike) or _is_file(text)
    key = str(Path(text).resolve()) if is_file else text
    if key in _LOADED:
        for info in _LOADED[key]:
            if registry.algorithms().get(info.name) is not info:
                registry.register(info)
        return tuple(info.name for info in _LOADED[key])
    if is_file and not Path(text).is_file():
        raise PluginError(f"plug-in {text}: no such file")
    before = dict(registry.algorithms())
    try:
        if is_file:
            _import_file(Path(text))
        else:
            importlib.import_module(text)
    except Exception as error:
        message = " ".join(str(error).split())
        raise PluginError(
            f"plug-in {text} failed to load: {type(error).__name__}: {message}"
        ) from error
    infos = tuple(
        info for name, info in registry.algorithms().items() if before.get(name) is not info
    )
    if not infos:
        if is_file:  # nothing to keep: a corrected file may be loaded again
            sys.modules.pop(_module_name(Path(text)), None)
        raise PluginError(
            f"plug-in {text} registered no algorithm (call "
            "jaxrl.algorithms.registry.register in it)"
        )
    _LOADED[key] = infos
    return tuple(info.name for info in infos)


def plugins_from_env(environ: dict[str, str] | None = None) -> list[str]:
    """The plug-ins listed in ``JAXRL_PLUGINS`` (``os.pathsep``-separated; empty entries
    skipped)."""
    value = (os.environ if environ is None else environ).get(ENV_VAR, "")
    return [entry.strip() for entry in value.split(os.pathsep) if entry.strip()]
