"""Print, one per line, the arguments that make ``uv pip install`` look where ``pip install``
would: the package index, extra indexes, find-links and constraints files of pip's
configuration (its files and ``PIP_*`` variables, as ``pip config list`` reads them; a
variable over the ``install`` section over ``global``), and pip's choice among indexes (the
best version found on any of them, not the first index that has the package)."""

from __future__ import annotations

import ast
import subprocess
import sys

# pip's option -> uv's; the values of the first three are space-separated lists.
OPTIONS = {
    "extra-index-url": "--extra-index-url",
    "find-links": "--find-links",
    "constraint": "--constraint",
    "index-url": "--index-url",
}
PRECEDENCE = ("global", "install", ":env:")  # later sections override earlier ones


def pip_settings() -> dict[str, str]:
    """pip's install settings, each from the section that overrides the others."""
    listing = subprocess.run(
        [sys.executable, "-m", "pip", "config", "list"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    found: dict[str, dict[str, str]] = {}
    for line in listing.splitlines():
        key, sep, value = line.partition("=")
        section, _, name = key.rpartition(".")
        if sep and section in PRECEDENCE:
            found.setdefault(name, {})[section] = str(ast.literal_eval(value))
    return {
        name: next(values[s] for s in reversed(PRECEDENCE) if s in values)
        for name, values in found.items()
    }


def uv_arguments(settings: dict[str, str]) -> list[str]:
    """uv's arguments for pip's ``settings``."""
    arguments = ["--index-strategy", "unsafe-best-match"]
    for name, option in OPTIONS.items():
        for value in settings.get(name, "").split():
            arguments += [option, value]
    return arguments


if __name__ == "__main__":
    print("\n".join(uv_arguments(pip_settings())))
