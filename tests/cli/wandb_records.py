"""What an offline wandb run logged, read back from its transaction log (``run-<id>.wandb``)
without a network or an account.

wandb 0.2x writes every record of a run (config, history rows, summary) to one file: a 7-byte
header (``:W&B``, the magic 0xBEE1, version 0), then LevelDB's log format, records split into
chunks in blocks of 32 KiB, each chunk a 7-byte header (CRC-32C, length, type: 1 full, 2
first, 3 middle, 4 last) and its bytes; each record is a ``wandb_internal_pb2.Record``. wandb
no longer ships a Python reader of the file, so the test reads it here
(``benchmarks/tracking_figure.py`` reads it with this module too).
"""

from __future__ import annotations

import dataclasses
import json
import struct
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from jaxrl.runs.metrics import read_csv

BLOCK = 32 * 1024
HEADER = 7


def records(path: Path) -> Iterator[Any]:
    """The ``wandb_internal_pb2.Record`` messages of a ``.wandb`` file, in order."""
    from wandb.proto import wandb_internal_pb2

    data = Path(path).read_bytes()
    assert data[:4] == b":W&B", f"{path} is not a wandb transaction log"
    position, chunks = HEADER, b""
    while position + HEADER <= len(data):
        left = BLOCK - position % BLOCK
        if left < HEADER:  # a block's tail too short for a chunk header is padding
            position += left
            continue
        _, length, kind = struct.unpack_from("<IHB", data, position)
        position += HEADER
        if kind == 0 and length == 0:  # zero padding up to the block's end
            position += left - HEADER
            continue
        chunks += data[position : position + length]
        position += length
        if kind in (1, 4):
            record = wandb_internal_pb2.Record()
            record.ParseFromString(chunks)
            chunks = b""
            yield record


def _items(items: Any) -> dict[str, Any]:
    return {
        "/".join(item.nested_key) if item.nested_key else item.key: json.loads(item.value_json)
        for item in items
    }


@dataclasses.dataclass
class OfflineRun:
    """One offline wandb run directory's records.

    Attributes:
      run_id: the wandb run's id.
      group: its group ('' for none).
      config: its config (the last value of each key).
      history: its history rows, wandb's own keys (``_step``, ...) left out.
      summary: its summary (the last value of each key).
    """

    run_id: str
    group: str
    config: dict[str, Any]
    history: list[dict[str, Any]]
    summary: dict[str, Any]


def offline_run(directory: Path) -> OfflineRun:
    """The records of the offline run in ``directory`` (``.../offline-run-<time>-<id>``).

    Runs finished in this process (the command run in-process) may not be on disk yet: a
    run's ``finish`` can return before wandb's service has written its last records (a
    resumed run read back without its run record under load), so this first waits for the
    service to write everything and stop (``wandb.teardown``; the next run starts another).
    """
    import wandb

    wandb.teardown()
    (path,) = Path(directory).glob("run-*.wandb")
    run_id, group, config, history, summary = "", "", {}, [], {}
    for record in records(path):
        kind = record.WhichOneof("record_type")
        if kind == "run":
            run_id, group = record.run.run_id, record.run.run_group
            config.update(_items(record.run.config.update))
        elif kind == "config":
            config.update(_items(record.config.update))
        elif kind == "history":
            row = _items(record.history.item)
            history.append({k: v for k, v in row.items() if not k.startswith("_")})
        elif kind == "summary":
            summary.update(_items(record.summary.update))
    config = {k: v.get("value", v) if isinstance(v, dict) else v for k, v in config.items()}
    return OfflineRun(run_id, group, config, history, summary)


def offline_runs(wandb_dir: Path) -> list[OfflineRun]:
    """Every offline run under ``wandb_dir`` (``.../wandb``), oldest first (a resumed run
    is one directory per training call, all with the run's id)."""
    return [offline_run(d) for d in sorted(Path(wandb_dir).glob("offline-run-*"))]


def assert_history_is_the_csvs(run_dir: Path, runs: list[OfflineRun]) -> None:
    """The wandb history of ``runs`` (a run's training calls, in order) against the run's
    CSVs: every evaluation of ``evals.csv`` (per seed and across seeds) and the update
    statistics' mean across seeds at each period's env steps (one collection per period)."""
    history = [row for run in runs for row in run.history]
    evals = [row for row in history if "eval/return" in row]
    table = read_csv(run_dir / "evals.csv")
    steps = np.unique(table["env_steps"])
    assert [row["env_steps"] for row in evals] == steps.tolist()
    for row, step in zip(evals, steps, strict=True):
        at = table["env_steps"] == step
        for seed, value in zip(table["seed"][at], table["eval_return"][at], strict=True):
            assert row[f"eval/return_seed_{int(seed)}"] == value
        assert row["eval/return"] == pytest.approx(np.mean(table["eval_return"][at]), rel=1e-12)
    updates = read_csv(run_dir / "updates.csv")
    train = [row for row in history if "train/critic_loss" in row]
    assert [row["env_steps"] for row in train] == np.unique(updates["env_steps"]).tolist()
    for row in train:
        at = updates["env_steps"] == row["env_steps"]
        mean = np.mean(updates["critic_loss"][at])
        assert row["train/critic_loss"] == pytest.approx(mean, rel=1e-12)
