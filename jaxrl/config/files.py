"""Files written whole, and read back checked.

Every file jaxrl rewrites (``config.json``, ``final_eval.json``, the learning-curve figures,
the sweep's and the study's tables, a trimmed CSV) is written to a temporary file beside it
and renamed over it (:func:`replace_file`; :func:`os.replace` is atomic on POSIX
filesystems): a fault while writing (a full disk, a kill) leaves the previous file as it
was, and a reader never sees half of one.

The files a resume reads back (a run's ``config.json`` and CSVs, ``sweep.json``, a
tuning study's ``tune.json`` and journal, the MuJoCo table's JSONL) are read and checked
here: damage is a :class:`DamagedFile` naming the file, what is wrong and what to do.

A line a killed writer left cut short (the file's last line, without its newline) is not
damage: it was never written whole, so the readers leave it out, as the kill left the file
before that write.
"""

from __future__ import annotations

import collections
import csv
import itertools
import json
import os
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any


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


RUN_REMEDY = "restore it from a copy, or train the run anew"
"""What to do about a damaged file of a run directory."""


class DamagedFile(ValueError):
    """A file that is read back is damaged (garbled or cut bytes, wrong columns, a line that
    is not JSON, JSON of the wrong shape).

    Attributes:
      path: the file.
      why: what is wrong (``"line 7: expected 5 columns, got 2"``).
    """

    def __init__(self, path: str | Path, why: str, remedy: str) -> None:
        super().__init__(f"{path} is damaged ({why}); {remedy}")
        self.path, self.why = Path(path), why


def read_text(path: str | Path, remedy: str) -> str:
    """The file's text (UTF-8).

    Raises:
      DamagedFile: bytes that are not UTF-8 text.
    """
    try:
        return Path(path).read_bytes().decode("utf-8")
    except UnicodeDecodeError as error:
        raise DamagedFile(path, f"byte {error.start}: not text", remedy) from None


def whole_lines(text: str) -> list[str]:
    """The lines of ``text`` that end with a newline (a cut-short last line left out)."""
    lines = text.split("\n")
    return lines[:-1]  # "" after a final newline, else the cut-short line


def read_json(path: str | Path, remedy: str, keys: Sequence[str] = ()) -> dict[str, Any]:
    """A JSON object with (at least) ``keys``.

    Raises:
      DamagedFile: not JSON, not an object, or an object without one of ``keys``.
    """
    text = read_text(path, remedy)
    try:
        data = json.loads(text)
    except json.JSONDecodeError as error:
        raise DamagedFile(path, f"line {error.lineno}: {error.msg}", remedy) from None
    if not isinstance(data, dict):
        raise DamagedFile(path, f"a JSON {type(data).__name__}, not an object", remedy)
    missing = [key for key in keys if key not in data]
    if missing:
        raise DamagedFile(path, f"no {', '.join(missing)}", remedy)
    return data


def read_csv_rows(
    path: str | Path, remedy: str, columns: Sequence[str] = ()
) -> tuple[list[str], list[list[str]]]:
    """``(header, rows)`` of a CSV of numbers written here (every cell a number or empty);
    a row cut short by a kill is left out, and a file without a whole header has none
    (``([], [])``).

    Raises:
      DamagedFile: a header without one of ``columns``, a row of another width than the
        header, or a cell that is not a number (naming the line).
    """
    lines = whole_lines(read_text(path, remedy))
    if not lines:
        return [], []
    try:
        table = list(csv.reader(lines))
    except csv.Error as error:
        raise DamagedFile(path, str(error), remedy) from None
    header, rows = table[0], table[1:]
    missing = [name for name in columns if name not in header]
    if missing:
        raise DamagedFile(path, f"line 1: no column {', '.join(missing)}", remedy)
    for number, row in enumerate(rows, 2):
        if len(row) != len(header):
            why = f"line {number}: expected {len(header)} columns, got {len(row)}"
            raise DamagedFile(path, why, remedy)
    try:  # every cell in one pass of C loops (DDPG's updates.csv has millions of rows)
        collections.deque(map(float, filter(None, itertools.chain.from_iterable(rows))), 0)
    except ValueError:  # find the line
        for number, row in enumerate(rows, 2):
            for cell in row:
                try:
                    if cell != "":
                        float(cell)
                except ValueError:
                    why = f"line {number}: {cell!r} is not a number"
                    raise DamagedFile(path, why, remedy) from None
    return header, rows


def read_jsonl(
    path: str | Path, remedy: str, keys: Sequence[str] = (), cut_short: list[int] | None = None
) -> list[dict[str, Any]]:
    """The JSON objects of a file of one per line (blank lines skipped), each with ``keys``.

    A line a killed writer cut short (the last line without its newline, or, where appends
    put what follows on a line of its own, a line that opens an object it does not close)
    is left out; its number is appended to ``cut_short`` where given.

    Raises:
      DamagedFile: a line that is not JSON (but for one cut short), or not an object with
        ``keys``.
    """
    text = read_text(path, remedy)
    lines = text.split("\n")
    rows = []
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError as error:
            stripped = line.strip()
            if number == len(lines) or (stripped[:1] == "{" and stripped[-1:] != "}"):
                if cut_short is not None:
                    cut_short.append(number)
                continue
            raise DamagedFile(path, f"line {number}: not JSON ({error.msg})", remedy) from None
        if not isinstance(row, dict) or any(key not in row for key in keys):
            expected = f"an object with {', '.join(keys)}" if keys else "an object"
            raise DamagedFile(path, f"line {number}: not {expected}", remedy)
        rows.append(row)
    return rows


def drop_cut_short(path: str | Path) -> None:
    """Cut the file back to its last newline: the line a killed writer left cut short goes,
    so that what is appended next starts a line of its own."""
    with open(path, "rb+") as file:
        size = file.seek(0, os.SEEK_END)
        if size == 0:
            return
        file.seek(size - 1)
        if file.read(1) == b"\n":
            return
        file.seek(0)
        keep = file.read().rfind(b"\n") + 1
        file.truncate(keep)


__all__ = [
    "RUN_REMEDY",
    "DamagedFile",
    "drop_cut_short",
    "read_csv_rows",
    "read_json",
    "read_jsonl",
    "read_text",
    "replace_file",
    "whole_lines",
    "write_dict_rows",
    "write_text",
]
