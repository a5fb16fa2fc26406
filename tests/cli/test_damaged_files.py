"""Damaged files a resume reads: a checkpoint that does not restore is skipped for the newest
one that does (said in one line), a run with none left and a damaged ``config.json`` end in
one line naming the file, and a checkpoint whose arrays differ from what was saved is never
restored silently (CRC-32 of each array, checked on restore)."""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import jax.numpy as jnp
import numpy as np
import pytest

from jaxrl.runs import CheckpointError, CheckpointStore, read_csv

from .helpers import TINY, TRPO_RUN, assert_kept_checkpoints, single_error_line

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
    assert_kept_checkpoints(run_dir, [2, 3])
    _damage(run_dir / "checkpoints" / "3")
    resumed = jaxrl("train", "trpo", "--resume", run_dir).check()
    assert "Traceback" not in resumed.stderr
    notices = [line for line in resumed.stderr.splitlines() if " is damaged" in line]
    assert len(notices) == 1, resumed.stderr
    notice = notices[0]
    assert notice.startswith(f"checkpoint {run_dir / 'checkpoints' / '3'} is damaged")
    assert notice.endswith("skipped it, resuming from an older checkpoint")
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


def _a_run_like_tree() -> dict[str, object]:
    """Leaves of the shapes and dtypes a tiny run's checkpoint holds (43 arrays: floats,
    counts, PRNG keys; enough for orbax to have reads under way when one fails), and one of
    64 kB (stored outside the database's b-tree)."""
    import jax

    shapes = [(2, 1), (2, 8, 1), (2, 8), (2, 3, 8), (2,), (2, 4), (2, 3), (2, 4, 3)] * 4
    tree: dict[str, object] = {f"f{i}": jnp.full(s, i, jnp.float32) for i, s in enumerate(shapes)}
    tree.update({f"n{i}": jnp.full((2,), i, jnp.int32) for i in range(8)})
    tree["empty"] = jnp.zeros((0, 4), jnp.int32)
    tree["keys"] = jax.random.split(jax.random.key(0), 2)
    tree["big"] = jax.random.normal(jax.random.key(1), (2, 8192))
    return tree


@pytest.fixture(scope="module")
def two_checkpoints(tmp_path_factory) -> Path:
    """A store with checkpoints 1 and 2 of :func:`_a_run_like_tree` (2's arrays are 1's plus
    one); tests copy it."""
    import jax

    directory = tmp_path_factory.mktemp("store") / "checkpoints"
    tree = _a_run_like_tree()
    with CheckpointStore(directory) as store:
        store.save(1, tree, {"period": 1})
        newer = {k: v if jax.dtypes.issubdtype(v.dtype, jax.dtypes.prng_key) else v + 1
                 for k, v in tree.items()}  # fmt: skip
        store.save(2, newer, {"period": 2})
    return directory


def _flip(path: Path) -> None:
    data = bytearray(path.read_bytes())
    for i in range(len(data) // 3, min(len(data), len(data) // 3 + 16)):
        data[i] ^= 0xFF
    path.write_bytes(bytes(data))


DAMAGES = {"flipped": _flip, "emptied": lambda p: p.write_bytes(b""), "missing": Path.unlink}
# Every file of a checkpoint, by kind (orbax names the array database's data files by hash):
# the arrays' database (manifests, b-tree and data files) is what a restore reads, with the
# metadata JSON; orbax's own descriptions of the tree are not read (the metadata JSON holds
# what a restore needs), and a checkpoint without its top commit marker is unfinished.
READ = ["meta/metadata", "tree/manifest.ocdbt", "tree/d/*", "tree/ocdbt.process_0/d/*"]
UNREAD = ["_CHECKPOINT_METADATA", "meta/commit_success.txt", "tree/_METADATA",
          "tree/_sharding", "tree/array_metadatas/process_0", "tree/commit_success.txt",
          "tree/ocdbt.process_0/manifest.ocdbt", "commit_success.txt"]  # fmt: skip


# Cost: about 0.25 s each (a copy of a 130 kB store and one or two restores), 9 s for all 36.
@pytest.mark.parametrize("how", list(DAMAGES))
@pytest.mark.parametrize("pattern", READ + UNREAD)
def test_a_checkpoint_with_any_file_damaged_restores_the_older_one_and_prints_nothing(
    two_checkpoints, tmp_path, capfd, monkeypatch, pattern, how
):
    """Each file of the newest checkpoint flipped, emptied or missing: the restore falls back
    to the older checkpoint with a one-line reason naming the checkpoint (or, where the file
    is not one a restore reads, restores the newest, its arrays checked by CRC-32), and
    nothing reaches stderr (orbax's concurrent reads left tracebacks there when one failed)."""
    import jax

    store_dir = Path(shutil.copytree(two_checkpoints, tmp_path / "checkpoints"))
    files = sorted((store_dir / "2").glob(pattern))
    assert files, pattern
    for path in files:
        DAMAGES[how](path)
    tree = _a_run_like_tree()
    # Errors raised in threads no one waits for are "unraisable" (pytest collects them as
    # warnings; the command prints their tracebacks): recorded here.
    unraisable: list[object] = []
    monkeypatch.setattr(sys, "unraisablehook", unraisable.append)
    capfd.readouterr()
    restored, meta, skipped = CheckpointStore(store_dir).restore_newest(tree)
    jax.block_until_ready(restored)
    err = capfd.readouterr().err
    assert err == "" and not unraisable, (err, [u.exc_value for u in unraisable])
    unfinished = pattern == "commit_success.txt" and how == "missing"
    newest = 1 if pattern in READ or unfinished else 2
    assert meta["period"] == newest
    np.testing.assert_array_equal(restored["f3"], tree["f3"] + (newest - 1))
    if pattern in READ:
        ((step, reason),) = skipped
        assert step == 2 and reason.startswith(f"checkpoint {store_dir / '2'}")
        assert "\n" not in reason and len(reason) < 400, reason
    else:
        assert skipped == []


def test_arrays_with_no_elements_are_kept_in_the_tree_and_restored(tmp_path):
    """MuJoCo XLA's state holds arrays with no elements (orbax saves none): the checkpoint
    describes them, and a restore gives them back with their shapes and dtypes."""
    import jax

    tree = {"w": jnp.arange(3.0), "empty": jnp.zeros((0, 4), jnp.int32),
            "keys": jax.random.split(jax.random.key(0), 0), "b": jnp.ones(2)}  # fmt: skip
    with CheckpointStore(tmp_path / "c") as store:
        store.save(1, tree, {"period": 1})
    restored, _ = CheckpointStore(tmp_path / "c").restore(tree)
    np.testing.assert_array_equal(restored["w"], tree["w"])
    np.testing.assert_array_equal(restored["b"], tree["b"])
    assert restored["empty"].shape == (0, 4) and restored["empty"].dtype == jnp.int32
    assert jax.dtypes.issubdtype(restored["keys"].dtype, jax.dtypes.prng_key)
    assert restored["keys"].shape == (0,)


# ---------------------------------------------------------------------------------------------
# The CSVs, sweep.json, a tuning study's files: damage is one line naming the file; a line a
# killed writer cut short is not damage.
# ---------------------------------------------------------------------------------------------

SWEEP = ["sweep", "trpo", *TINY, "--total-steps", "256", "--sweep", "max-kl=0.005,0.02"]
TUNE = ["tune", "trpo", *TINY, "--total-steps", "256", "--search", "max-kl=0.002:0.05:log"]
TUNE += ["--batch", "1"]


@pytest.fixture(scope="module")
def stopped_run(jaxrl, tmp_path_factory) -> Path:
    """A run stopped after period 3 of 4 (checkpoints at 2 and 3); tests copy it."""
    run_dir = tmp_path_factory.mktemp("stopped") / "run"
    jaxrl(*STOPPED, "--run-dir", run_dir).check()
    return run_dir


@pytest.fixture(scope="module")
def finished_sweep(jaxrl, tmp_path_factory) -> Path:
    """A finished sweep of two settings; tests copy it."""
    sweep_dir = tmp_path_factory.mktemp("sweep") / "sweep"
    jaxrl(*SWEEP, "--sweep-dir", sweep_dir).check()
    return sweep_dir


@pytest.fixture(scope="module")
def tuned(jaxrl, tmp_path_factory) -> Path:
    """A study of one finished trial; tests copy it."""
    tune_dir = tmp_path_factory.mktemp("tune") / "tune"
    jaxrl(*TUNE, "--trials", "1", "--tune-dir", tune_dir).check()
    return tune_dir


def _copy(source: Path, tmp_path: Path) -> Path:
    return Path(shutil.copytree(source, tmp_path / source.name))


def _replace_line(path: Path, number: int, text: str) -> None:
    lines = path.read_text().splitlines(keepends=True)
    lines[number - 1] = text + "\n"
    path.write_text("".join(lines))


RUN_CSV_DAMAGE = [
    ("evals.csv", lambda p: _replace_line(p, 3, "0,1"), "line 3: expected 5 columns, got 2"),
    (
        "evals.csv",
        lambda p: _replace_line(p, 4, "1,1,128,abc,0.5"),
        "line 4: 'abc' is not a number",
    ),
    ("updates.csv", lambda p: _replace_line(p, 1, "seed,update"), "line 1: no column period"),
    (
        "updates.csv",
        lambda p: p.write_bytes(p.read_bytes()[:40] + b"\xff\xfe"),
        "byte 40: not text",
    ),
]


@pytest.mark.parametrize(("name", "damage", "why"), RUN_CSV_DAMAGE)
def test_a_damaged_csv_of_a_run_is_one_line_naming_it(
    jaxrl, stopped_run, tmp_path, name, damage, why
):
    run_dir = _copy(stopped_run, tmp_path)
    damage(run_dir / name)
    line = single_error_line(jaxrl("train", "trpo", "--resume", run_dir))
    assert f"{run_dir / name} is damaged ({why}" in line, line
    assert line.endswith("restore it from a copy, or train the run anew")


def test_a_row_cut_short_by_a_kill_is_redone_on_resume(jaxrl, trpo_run, stopped_run, tmp_path):
    run_dir = _copy(stopped_run, tmp_path)
    with open(run_dir / "evals.csv", "a") as file:
        file.write("1,4,51")  # a killed writer's last row, without its newline
    jaxrl("train", "trpo", "--resume", run_dir).check()
    plain, again = read_csv(trpo_run[0] / "evals.csv"), read_csv(run_dir / "evals.csv")
    np.testing.assert_array_equal(again["eval_return"], plain["eval_return"])
    np.testing.assert_array_equal(again["period"], plain["period"])


@pytest.mark.parametrize(
    ("name", "text", "why"),
    [
        ("sweep.json", '{"base": {', "line 1: Expecting property name"),
        ("sweep.json", "[1, 2]", "a JSON list, not an object"),
        ("runs/max_kl=0.02/final_eval.json", '{"episodes": 2}', "no env_steps, deterministic"),
        ("runs/max_kl=0.005/evals.csv", "seed,period\n0\n", "line 2: expected 2 columns, got 1"),
    ],
)
def test_a_damaged_file_of_a_sweep_is_one_line_naming_it(
    jaxrl, finished_sweep, tmp_path, name, text, why
):
    sweep_dir = _copy(finished_sweep, tmp_path)
    (sweep_dir / name).write_text(text)
    line = single_error_line(jaxrl(*SWEEP, "--sweep-dir", sweep_dir))
    assert f"{sweep_dir / name} is damaged ({why}" in line, line
    assert "restore it from a copy, or " in line


@pytest.mark.parametrize(
    ("name", "damage", "why"),
    [
        ("tune.json", lambda p: p.write_text('{"base"'), "line 1: Expecting ':' delimiter"),
        ("study.log", lambda p: _replace_line(p, 2, '{"op_code": 1, x}'), "line 2: not JSON"),
        ("study.log", lambda p: _replace_line(p, 1, '["op_code"]'), "line 1: not an object with"),
    ],
)
def test_a_damaged_file_of_a_study_is_one_line_naming_it(jaxrl, tuned, tmp_path, name, damage, why):
    tune_dir = _copy(tuned, tmp_path)
    damage(tune_dir / name)
    line = single_error_line(jaxrl(*TUNE, "--trials", "1", "--tune-dir", tune_dir))
    assert f"{tune_dir / name} is damaged ({why}" in line, line
    assert "restore it from a copy, or " in line


def test_an_operation_cut_short_in_the_journal_does_not_stop_the_study(jaxrl, tuned, tmp_path):
    """Optuna skips a last journal line without its newline, but the next operation would
    be appended to it, and the study could not be read again: the cut line is removed."""
    tune_dir = _copy(tuned, tmp_path)
    journal = tune_dir / "study.log"
    whole = journal.read_text()
    journal.write_text(whole + '{"op_code": 5, "worker_id": "x", "tri')
    jaxrl(*TUNE, "--trials", "2", "--tune-dir", tune_dir).check()
    assert journal.read_text().startswith(whole)
    again = jaxrl(*TUNE, "--trials", "2", "--tune-dir", tune_dir).check()
    assert "Stopped with" not in again.stdout  # both trials ended: the journal reads whole
