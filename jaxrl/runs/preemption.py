"""SIGTERM as a request to stop at the next evaluation period, within a grace period.

Cluster managers and clouds send SIGTERM before SIGKILL (SLURM: ``--signal=TERM@SECONDS``,
usually 30-60 s ahead). A :class:`Preemption` turns the first SIGTERM into a request that
:func:`jaxrl.runs.runner.train_run` reads after each evaluation period (its ``stop``): the run
checkpoints that period and returns, so nothing it finished is lost. If no period ends
within ``grace`` seconds (a long period, the final evaluation), or a second SIGTERM comes,
the run is interrupted as by Ctrl-C: pending checkpoint writes finish and it resumes from its
last checkpoint. :func:`interrupts_deferred` holds these signals back while a checkpoint
write is being started.

Ctrl-C (SIGINT) interrupts at once, as Python's own handler does, and is remembered too:
Python drops a ``KeyboardInterrupt`` raised while a finalizer or a garbage-collector
callback runs (an orbax save's event loop is collected after each checkpoint; JAX runs a
callback on every collection), and the run's ``stop`` then raises it again at the next
period. Such a dropped interrupt is not reported ("Exception ignored in ...", with a
traceback): it is not lost.
"""

from __future__ import annotations

import contextlib
import signal
import sys
import threading
from collections.abc import Callable, Iterator
from typing import Any

DEFAULT_GRACE = 20.0
"""Seconds from SIGTERM to the interruption when no period has ended (under SLURM's usual
30-60 s between SIGTERM and SIGKILL)."""


class Preemption:
    """A SIGTERM handler and the ``stop`` callable of :func:`jaxrl.runs.runner.train_run`.

    Attributes:
      grace: seconds between the first SIGTERM and the interruption.
      requested: whether a SIGTERM came.
      interrupted: whether a Ctrl-C came.
    """

    def __init__(self, grace: float = DEFAULT_GRACE) -> None:
        if not grace > 0:
            raise ValueError(f"the preemption grace must be positive seconds, got {grace}")
        self.grace, self.requested, self.interrupted = float(grace), False, False

    def install(self) -> Preemption:
        """Handle SIGTERM, and Ctrl-C where Python's own handler has it (not where the
        process was started with it ignored), in the main thread; elsewhere nothing is
        installed."""
        global _installed, _reported
        if threading.current_thread() is threading.main_thread():
            signal.signal(signal.SIGTERM, self._on_sigterm)
            signal.signal(signal.SIGALRM, _interrupt)
            if signal.getsignal(signal.SIGINT) is signal.default_int_handler:
                signal.signal(signal.SIGINT, self._on_sigint)
            _installed = self
            if sys.unraisablehook is not _unraisable:
                _reported, sys.unraisablehook = sys.unraisablehook, _unraisable
        return self

    def _on_sigint(self, signum: int, frame: Any) -> None:
        self.interrupted = True
        raise KeyboardInterrupt

    def _on_sigterm(self, signum: int, frame: Any) -> None:
        if self.requested:  # a second SIGTERM: now
            raise KeyboardInterrupt
        self.requested = True
        signal.setitimer(signal.ITIMER_REAL, self.grace)

    def __call__(self) -> bool:
        """Whether to stop at this period (every process of a job answers the same); a
        Ctrl-C whose ``KeyboardInterrupt`` was dropped is raised again here (after a
        SIGTERM, the run stops at this period anyway)."""
        from jaxrl.training.sharding import processes_agree, several_processes

        if self.interrupted:
            raise KeyboardInterrupt

        stop = (
            self.requested if not several_processes() else not processes_agree(not self.requested)
        )
        if stop:
            self.disarm()
        return stop

    def disarm(self) -> None:
        """Cancel the pending interruption (the run stopped in time)."""
        if threading.current_thread() is threading.main_thread():
            signal.setitimer(signal.ITIMER_REAL, 0)


def _interrupt(signum: int, frame: Any) -> None:
    raise KeyboardInterrupt


_installed: Preemption | None = None
"""The preemption installed last: the one whose signals this process handles."""
_reported: Callable[[Any], None] = sys.unraisablehook
"""The ``sys.unraisablehook`` that :func:`_unraisable` replaced."""


def _unraisable(unraisable: Any) -> None:
    """``sys.unraisablehook`` while a :class:`Preemption` is installed: silent for the
    ``KeyboardInterrupt`` of a signal it handled (its ``stop`` raises a Ctrl-C again and
    stops at the period after a SIGTERM); the hook before it for everything else."""
    if (
        _installed is not None
        and (_installed.interrupted or _installed.requested)
        and issubclass(unraisable.exc_type, KeyboardInterrupt)
    ):
        return
    _reported(unraisable)


_DEFERRED = (signal.SIGINT, signal.SIGTERM, signal.SIGALRM)


@contextlib.contextmanager
def interrupts_deferred() -> Iterator[None]:
    """Hold Ctrl-C, SIGTERM and the grace timer's SIGALRM back until the block ends, then
    deliver them to their handlers as they came.

    A ``KeyboardInterrupt`` raised inside ``threading`` while the main thread starts a
    thread (orbax starts several per checkpoint write) can leave a lock taken: the new
    thread waits on it forever and the interpreter, at exit, waits on that thread. Work
    that starts threads runs inside this block. Outside the main thread (where Python runs
    no signal handler) it does nothing.
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    came: list[int] = []
    previous = {signum: signal.signal(signum, lambda s, _: came.append(s)) for signum in _DEFERRED}
    try:
        yield
    finally:
        for signum, handler in previous.items():  # None: a handler not set from Python
            signal.signal(signum, signal.SIG_DFL if handler is None else handler)
        for signum in came:
            signal.raise_signal(signum)
