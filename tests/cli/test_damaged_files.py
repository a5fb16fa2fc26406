"""Damaged files a resume reads: a checkpoint that does not restore is skipped for the newest
one that does (said in one line), a run with none left and a damaged ``config.json`` end in
one line naming the file, and a checkpoint whose arrays differ from what was saved is never
restored silently (CRC-32 of each array, checked on restore)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import jax.numpy as jnp
import numpy as np
import pytest

from jaxrl.runs import CheckpointError, CheckpointStore, read_csv

from .helpers import TINY, TRPO_RUN, single_error_line

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
