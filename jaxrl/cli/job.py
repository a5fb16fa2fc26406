"""A command in a job of several processes (``jaxrl train|sweep|tune`` with the launch
options, or under a cluster manager): joining the job, what the processes other than process
0 say, and leaving it when this process fails."""

from __future__ import annotations

import sys
from typing import Any

from jaxrl.cli.parsing import command_spec, preset_in_force
from jaxrl.cli.usage import UsageError, name_flags


def join_job(args: Any, argv: list[str]) -> None:
    """Join the job of several processes the launch options describe (or a cluster manager
    launched: :func:`jaxrl.training.initialize_distributed`), before any other JAX call."""
    from jaxrl.config.settings import launch_settings
    from jaxrl.training.sharding import initialize_distributed

    try:
        initialize_distributed(**{name: args.run[name] for name in launch_settings()})
    except ValueError as error:
        flags = command_spec(argv, preset_in_force(argv)).options
        raise UsageError(name_flags(str(error), flags)) from None


def done_elsewhere(what: str) -> int:
    """What a process of a job other than process 0 says when its part is done."""
    import jax

    print(
        f"Process {jax.process_index()} of {jax.process_count()}: done (process 0 wrote the "
        f"{what}).",
        file=sys.stderr,
    )
    return 0


def leave_job_on_failure() -> None:
    """In a job of several processes, end this process now with the traceback of the
    exception being handled: the others cannot go on without it (call it in ``except``)."""
    from jaxrl.training.sharding import leave_job, several_processes

    if several_processes():
        import traceback

        leave_job(traceback.format_exc())
