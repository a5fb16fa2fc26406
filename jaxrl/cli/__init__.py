"""The ``jaxrl`` command: train, watch, compare and resume runs without writing code.

::

    jaxrl train trpo --env Pendulum-v1             # the main job: 8 seeds, one program
    jaxrl train ddpg --env Pendulum-v1 --tau 0.01  # any hyperparameter by its name
    jaxrl train trpo --resume runs/trpo-...        # continue from the last checkpoint
    jaxrl sweep trpo --sweep max-kl=0.005,0.01 --num-seeds 8   # settings x seeds, ranked
    jaxrl tune trpo --search max-kl=0.001:0.05:log --trials 40  # Optuna, batches of trials
    jaxrl train trpo --preset-file tunes/.../best.json         # the best trial's values
    jaxrl evaluate runs/trpo-...                   # evaluation returns of the final policy
    jaxrl export runs/trpo-... --format onnx       # the policy as a file, without jaxrl
    jaxrl plot runs/trpo-... runs/npg-...          # learning curves in one figure
    jaxrl train td3 --plugin examples/td3.py       # an algorithm from a plug-in file

Plug-ins (:mod:`jaxrl.algorithms.plugins`): ``--plugin FILE_OR_MODULE`` (anywhere on the
command line, repeatable) and the ``JAXRL_PLUGINS`` environment variable name files or
modules that register algorithms; they are loaded before the command line is read.

Every run writes a run directory (:mod:`jaxrl.runs.run_dir`): ``config.json``, metrics as CSV
and TensorBoard events, ``learning_curve.png`` and orbax checkpoints. Bad arguments, and a
damaged file a command reads back (:class:`jaxrl.config.DamagedFile`), end with one line on
stderr naming the problem and exit status 2; a path the system refuses (a file where a folder
is needed, no permission, no space), with one naming the path and exit status 1.

The command's modules import one way: this entry point -> :mod:`jaxrl.cli.studies`
(``sweep``, ``tune``) -> :mod:`jaxrl.cli.train` -> :mod:`jaxrl.cli.results` (``evaluate``,
``export``, ``plot``, ``compare``), :mod:`jaxrl.cli.job` (a job of several processes) and
:mod:`jaxrl.cli.preset_file` (``--preset-file``) -> :mod:`jaxrl.cli.parsing` (reading the
command line) -> :mod:`jaxrl.cli.options` (the commands' options) -> :mod:`jaxrl.cli.usage`
(one-line errors).
"""

from __future__ import annotations

import atexit
import errno
import functools
import gc
import os
import sys
from pathlib import Path

from jaxrl.cli import results, studies, train
from jaxrl.cli.options import PROG, CompareCommand, EvaluateCommand, ExportCommand, PlotCommand
from jaxrl.cli.parsing import option_value, parse, preset_in_force
from jaxrl.cli.preset_file import expand_preset_file
from jaxrl.cli.usage import UsageError
from jaxrl.config.files import DamagedFile

__all__ = ["load_plugins", "main", "parse", "preset_in_force"]

PLUGIN_FLAG = "--plugin"


def _enable_compilation_cache() -> None:
    """Keep compiled programs between runs (JAX's persistent cache), so a repeated or resumed
    run starts in seconds. ``JAX_COMPILATION_CACHE_DIR`` chooses another place."""
    import jax

    if os.environ.get("JAX_COMPILATION_CACHE_DIR"):
        return
    root = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    path = root / "jaxrl" / "jax-compilation-cache"
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError:
        return
    jax.config.update("jax_compilation_cache_dir", str(path))


def load_plugins(argv: list[str]) -> list[str]:
    """Load the plug-ins of ``JAXRL_PLUGINS`` and of every ``--plugin FILE_OR_MODULE`` (or
    ``--plugin=...``) in ``argv``; return ``argv`` without those options. A plug-in that
    cannot be loaded or registers nothing is a usage error naming it."""
    from jaxrl.algorithms import plugins

    from_env = plugins.plugins_from_env()
    specs, rest = list(from_env), []
    args = iter(argv)
    for arg in args:
        if arg == PLUGIN_FLAG:
            spec = next(args, None)
            if spec is None or spec.startswith("-"):
                raise UsageError(f"{PLUGIN_FLAG} needs a plug-in file or module name")
            specs.append(spec)
        elif arg.startswith(PLUGIN_FLAG + "="):
            specs.append(arg.partition("=")[2])
        else:
            rest.append(arg)
    for number, spec in enumerate(specs):
        try:
            plugins.load_plugin(spec)
        except plugins.PluginError as error:
            where = f" (named by {plugins.ENV_VAR})" if number < len(from_env) else ""
            raise UsageError(f"{error}{where}") from None
    return rest


def with_resumed_algorithm(argv: list[str]) -> list[str]:
    """``jaxrl train --resume RUN_DIR ...`` as ``jaxrl train ALGO --resume RUN_DIR ...``, the
    algorithm read from the run's ``config.json`` (other commands are returned as given).

    Raises:
      UsageError: ``RUN_DIR`` is not a run directory.
    """
    resume = option_value(argv, "--resume")
    if argv[:1] != ["train"] or resume is None or (len(argv) > 1 and argv[1][:1] != "-"):
        return argv
    if any(token in ("-h", "--help") for token in argv):
        return argv
    return [argv[0], train.resumed_run(resume)[1].algo, *argv[1:]]


@functools.cache
def _freeze_at_exit() -> None:
    """At the interpreter's exit, once the handlers that libraries register during a command
    (orbax, wandb) have run, spare the cyclic garbage collector its last walk over every
    object that JAX, Flax, orbax and matplotlib made (``gc.freeze``): most of a second of
    each command on a CPU. Reference counting still frees them, and the command has closed
    every file it writes before it returns. Registered once however often ``main`` runs."""
    atexit.register(gc.freeze)


def _versions() -> str:
    """``jaxrl X (jax Y, jaxlib Z)``: what a bug report needs, read without importing JAX."""
    from importlib import metadata

    from jaxrl import __version__

    found = []
    for package in ("jax", "jaxlib"):
        try:
            found.append(f"{package} {metadata.version(package)}")
        except metadata.PackageNotFoundError:
            found.append(f"{package} not installed")
    return f"{PROG} {__version__} ({', '.join(found)})"


def main(argv: list[str] | None = None) -> int:
    """Run the ``jaxrl`` command; returns the exit status."""
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv in (["--version"], ["-V"]):
        print(_versions())
        return 0
    _freeze_at_exit()
    try:
        argv = expand_preset_file(with_resumed_algorithm(load_plugins(argv)))
        args = parse(argv)
        if isinstance(args, PlotCommand):
            return results.plot(args)
        if isinstance(args, CompareCommand):
            return results.compare(args)
        _enable_compilation_cache()
        if isinstance(args, EvaluateCommand):
            return results.evaluate(args)
        if isinstance(args, ExportCommand):
            return results.export(args)
        if type(args).command == "sweep":
            return studies.sweep(args, argv)
        if type(args).command == "tune":
            return studies.tune(args, argv)
        return train.train(args, argv)
    except (UsageError, DamagedFile) as error:  # a damaged file: what to do, not where
        message = " ".join(str(error).split())
        sys.stderr.write(f"{PROG}: error: {message}\n")
        return 2
    except BrokenPipeError:
        # The reader of the output went away (`jaxrl --help | head -3`): stop quietly, as
        # other commands do; what is still buffered for stdout goes nowhere at exit.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1
    except OSError as error:  # a path the system refused: which one, and why
        sys.stderr.write(f"{PROG}: error: {path_problem(error)}\n")
        return 1


def path_problem(error: OSError) -> str:
    """An operating system's refusal of a file or folder as one line: the path and the
    reason, in words for the ones a mistyped path gives."""
    reasons = {
        errno.EEXIST: "a file is there, where a folder is needed",
        errno.ENOTDIR: "part of this path is a file, not a folder",
        errno.EISDIR: "this is a folder; name a file",
    }
    reason = reasons.get(error.errno, error.strerror or str(error))
    return f"{error.filename}: {reason}" if error.filename else reason
