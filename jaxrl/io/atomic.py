"""Files written whole or not at all.

Every file jaxrl rewrites (``config.json``, ``final_eval.json``, the learning-curve figures,
the sweep's and the study's tables, a trimmed CSV) is written to a temporary file beside it
and renamed over it (:func:`os.replace`, atomic on POSIX filesystems): a fault while writing
(a full disk, a kill) leaves the previous file as it was, and a reader never sees half of
one. The temporary file keeps the target's suffix (a figure's format is read from it).
"""

from __future__ import annotations

import csv
import os
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

__all__ = ["replace_file", "write_dict_rows", "write_text"]


def replace_file(path: str | Path, write: Callable[[Path], object]) -> Path:
    """``write(tmp)`` writes the new content to ``tmp``, which then replaces ``path``; on a
    failure the temporary file is removed and ``path`` is left as it was. Returns ``path``."""
    path = Path(path)
    tmp = path.with_name(f".{path.stem}.tmp{path.suffix}")
    try:
        write(tmp)
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)
    return path


def write_text(path: str | Path, text: str) -> Path:
    """``path`` replaced by ``text`` (:func:`replace_file`)."""
    return replace_file(path, lambda tmp: tmp.write_text(text))


def write_dict_rows(
    path: str | Path, rows: Sequence[Mapping[str, Any]], columns: Sequence[str]
) -> Path:
    """``path`` replaced by a CSV of ``rows`` under the header ``columns``."""

    def write(tmp: Path) -> None:
        with open(tmp, "w", newline="") as handle:
            writer = csv.DictWriter(handle, fieldnames=list(columns))
            writer.writeheader()
            writer.writerows(rows)

    return replace_file(path, write)
