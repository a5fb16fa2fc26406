"""Damaged files a resume reads: a checkpoint that does not restore is skipped for the newest
one that does (said in one line), a run with none left and a damaged ``config.json`` end in
one line naming the file, and a checkpoint whose arrays differ from what was saved is never
restored silently (CRC-32 of each array, checked on restore)."""

from __future__ import annotations

import json
from pathlib import Path

import jax.numpy as jnp
import numpy as np
import pytest

from jaxrl.io import CheckpointError, CheckpointStore, read_csv

from .helpers import TRPO_RUN, single_error_line

STOPPED = [*TRPO_RUN, "--checkpoint-every", "1", "--stop-after-periods", "3"]


def _damage(checkpoint: Path) -> None:
    """Flip 16 bytes in the middle of every data file of a checkpoint's arrays."""
    files = [p for p in (checkpoint / "tree").rglob("*") if p.is_file() and p.parent.name == "d"]
    assert files
    for path in files:
        data = bytearray(path.read_bytes())
        for i in range(len(data) // 3, len(data) // 3 + 16):
            data[i] ^= 0xFF
        path.write_bytes(bytes(data))


def test_a_damaged_newest_checkpoint_is_skipped_for_an_older_one(jaxrl, trpo_run, tmp_path):
    run_dir = tmp_path / "run"
    jaxrl(*STOPPED, "--run-dir", run_dir).check()
    assert CheckpointStore(run_dir / "checkpoints").steps() == [2, 3]
    _damage(run_dir / "checkpoints" / "3")
    resumed = jaxrl("train", "trpo", "--resume", run_dir).check()
    assert f"checkpoint {run_dir / 'checkpoints' / '3'} is damaged" in resumed.stderr
    assert "skipped it, resuming from an older checkpoint" in resumed.stderr
    assert "resuming at period 2/4" in resumed.stderr
    # The run ends as the uninterrupted one: the rows after period 2 were trimmed and redone.
    plain = read_csv(trpo_run[0] / "evals.csv")
    again = read_csv(run_dir / "evals.csv")
    np.testing.assert_array_equal(again["eval_return"], plain["eval_return"])
    np.testing.assert_array_equal(again["period"], plain["period"])


def test_a_run_whose_checkpoints_are_all_damaged_is_one_line(jaxrl, tmp_path):
    run_dir = tmp_path / "run"
    jaxrl(*STOPPED, "--run-dir", run_dir).check()
    for step in (2, 3):
        _damage(run_dir / "checkpoints" / str(step))
    line = single_error_line(jaxrl("train", "trpo", "--resume", run_dir))
    assert f"--resume {run_dir}: no checkpoint in" in line and "train it anew" in line


@pytest.mark.parametrize("text", ['{"algo": "trpo", "env"', '["not", "a config"]', "\xff"])
def test_a_damaged_config_json_is_one_line_naming_it(jaxrl, trpo_run, tmp_path, text):
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    for name in ("evals.csv", "updates.csv"):
        (run_dir / name).write_bytes((trpo_run[0] / name).read_bytes())
    (run_dir / "config.json").write_bytes(text.encode("latin-1"))
    for command in (["train", "trpo", "--resume", run_dir], ["evaluate", run_dir]):
        line = single_error_line(jaxrl(*command))
        assert f"{run_dir / 'config.json'} is" in line, line
        assert "restore it from a copy, or train the run anew" in line


def test_an_array_that_differs_from_what_was_saved_is_never_restored(tmp_path):
    """A change no file format notices (simulated: the recorded CRC-32 of one array no
    longer matches its bytes) fails the restore with the array's path."""
    tree = {"w": jnp.arange(6.0).reshape(2, 3), "b": jnp.ones(3)}
    with CheckpointStore(tmp_path / "c") as store:
        store.save(1, tree, {"period": 1})
    restored, _ = CheckpointStore(tmp_path / "c").restore(tree)
    np.testing.assert_array_equal(restored["w"], tree["w"])
    meta_path = tmp_path / "c" / "1" / "meta" / "metadata"
    meta = json.loads(meta_path.read_text())
    (entry,) = [leaf for leaf in meta["leaves"] if leaf["path"] == "['w']"]
    entry["crc32"] ^= 1
    meta_path.write_text(json.dumps(meta))
    with pytest.raises(CheckpointError, match=r"is damaged: \['w'\] differs from what was saved"):
        CheckpointStore(tmp_path / "c").restore(tree)
