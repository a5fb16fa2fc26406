"""A run's metrics files (``jaxrl.runs.metrics``): ``updates.csv`` keeps every statistic, even
one that first appears periods into the run, and TensorBoard gets one point per window of
env steps, the window's mean. Checked against plain loops over the rows."""

from __future__ import annotations

import csv
import math
from pathlib import Path

import numpy as np
import pytest

from jaxrl.runs import read_csv
from jaxrl.runs.metrics import (
    TENSORBOARD_ENV_STEPS,
    UPDATE_COLUMNS,
    CsvTable,
    MetricsLogger,
    tensorboard_points,
    truncate_csv,
)

from .helpers import as_columns, tensorboard_scalars


def _rows(seed: int, period: int, steps: range, **stats: float) -> list[dict]:
    return [
        {"seed": seed, "period": period, "update": i + 1, "env_steps": step,
         "train_return": math.nan, **stats}
        for i, step in enumerate(steps)
    ]  # fmt: skip


def _lines(path: Path) -> list[list[str]]:
    with open(path, newline="") as file:
        return list(csv.reader(file))


def test_a_statistic_that_appears_later_becomes_a_column(tmp_path):
    """A first period of warm-up rows (no statistics: DDPG before its first update) used to
    fix the header, and every later loss was dropped."""
    path = tmp_path / "updates.csv"
    table = CsvTable(path, UPDATE_COLUMNS)
    table.append(as_columns(_rows(0, 1, range(1, 4))))
    table.append(as_columns(_rows(0, 2, range(4, 6), critic_loss=2.5, actor_loss=-1.0)))
    lines = _lines(path)
    assert lines[0] == [*UPDATE_COLUMNS, "actor_loss", "critic_loss"]
    assert all(len(line) == len(lines[0]) for line in lines)
    data = read_csv(path)
    np.testing.assert_array_equal(data["env_steps"], [1, 2, 3, 4, 5])
    np.testing.assert_array_equal(data["critic_loss"], [np.nan] * 3 + [2.5, 2.5])
    np.testing.assert_array_equal(data["actor_loss"], [np.nan] * 3 + [-1.0, -1.0])

    # A table reopened (a resumed run) widens the same way and keeps the order it has.
    again = CsvTable(path, UPDATE_COLUMNS)
    again.append(as_columns(_rows(0, 3, range(6, 7), critic_loss=1.0, q=3.0)))
    assert _lines(path)[0] == [*UPDATE_COLUMNS, "actor_loss", "critic_loss", "q"]
    data = read_csv(path)
    np.testing.assert_array_equal(data["q"], [np.nan] * 5 + [3.0])
    np.testing.assert_array_equal(data["actor_loss"], [np.nan] * 3 + [-1.0, -1.0, np.nan])


def test_a_file_with_a_statistics_earlier_name_reads_and_resumes_under_its_name_now(tmp_path):
    """NPG's and TRPO's ``vf_loss`` is ``critic_loss`` now: an ``updates.csv`` written before
    reads with the new name, and a resume renames the column rather than starting a second
    one. (Milliseconds.)"""
    path = tmp_path / "updates.csv"
    old = [*UPDATE_COLUMNS, "kl", "vf_loss"]
    with open(path, "w", newline="") as file:
        csv.writer(file).writerows([old, [0, 1, 1, 4, "", 0.5, 2.0], [0, 2, 2, 8, "", 0.25, 1.0]])
    data = read_csv(path)
    assert "vf_loss" not in data
    np.testing.assert_array_equal(data["critic_loss"], [2.0, 1.0])

    truncate_csv(path, 1)  # a resume from period 1's checkpoint
    CsvTable(path, UPDATE_COLUMNS).append(
        as_columns(_rows(0, 2, range(8, 9), kl=0.5, critic_loss=3.0))
    )
    assert _lines(path)[0] == [*UPDATE_COLUMNS, "kl", "critic_loss"]
    np.testing.assert_array_equal(read_csv(path)["critic_loss"], [2.0, 3.0])


def test_a_batch_of_rows_takes_every_name_any_row_carries(tmp_path):
    path = tmp_path / "updates.csv"
    CsvTable(path, UPDATE_COLUMNS).append(
        as_columns(_rows(0, 1, range(1, 3)) + _rows(0, 1, range(3, 4), kl=0.5))
    )
    assert _lines(path)[0] == [*UPDATE_COLUMNS, "kl"]
    np.testing.assert_array_equal(read_csv(path)["kl"], [np.nan, np.nan, 0.5])


def _points_by_loop(rows: list[dict], window: int) -> dict:
    """The same as ``tensorboard_points``, by a plain loop over windows."""
    out = {}
    for seed in sorted({r["seed"] for r in rows}):
        mine = [r for r in rows if r["seed"] == seed]
        for w in range(0, max(r["env_steps"] for r in mine) // window + 1):
            inside = [r for r in mine if w * window < r["env_steps"] <= (w + 1) * window]
            if not inside:
                continue
            means = {}
            for name in ("actor_loss", "critic_loss", "train_return"):
                values = [r[name] for r in inside if name in r and np.isfinite(r[name])]
                if values:
                    means[name] = float(np.mean(values))
            out[seed, max(r["env_steps"] for r in inside)] = means
    return out


def test_tensorboard_points_are_window_means_of_the_finite_values():
    rng = np.random.default_rng(0)
    rows = []
    for seed in (0, 1):
        for step in range(1, 3_501):
            row = {
                "seed": seed,
                "period": 1 + step // 1_000,
                "update": step,
                "env_steps": step,
                "train_return": float(rng.normal()) if step % 700 == 0 else math.nan,
            }
            if step > 1_500:  # a warm-up: no losses before
                row.update(actor_loss=float(rng.normal()), critic_loss=float(rng.normal()))
            rows.append(row)  # fmt: skip
    points = tensorboard_points(as_columns(rows), 1_000)
    got = {(seed, step): means for seed, step, means in points}
    assert len(got) == len(points) == 8  # windows ending at 1,000, 2,000, 3,000, 3,500
    expected = _points_by_loop(rows, 1_000)
    assert got.keys() == expected.keys()
    for key, means in expected.items():
        assert got[key].keys() == means.keys(), key
        for name, value in means.items():
            assert got[key][name] == pytest.approx(value, rel=1e-12), (key, name)
    # Before the warm-up ends only the episode return at step 700 is finite.
    assert got[0, 1_000] == {"train_return": rows[699]["train_return"]}


def test_rows_further_apart_than_a_window_are_their_own_points():
    """On-policy runs (a row per collection of >= 1,000 env steps) keep every row."""
    steps = range(2_048, 5 * 2_048 + 1, 2_048)
    rows = _rows(0, 1, steps, kl=0.25)
    for row, value in zip(rows, (1.0, 2.0, 3.0, 4.0, 5.0), strict=True):
        row["critic_loss"] = value
    points = tensorboard_points(as_columns(rows), TENSORBOARD_ENV_STEPS)
    assert [(seed, step) for seed, step, _ in points] == [(0, s) for s in steps]
    assert [means["critic_loss"] for _, _, means in points] == [1.0, 2.0, 3.0, 4.0, 5.0]


def test_the_logger_writes_every_row_to_csv_and_window_means_to_tensorboard(tmp_path):
    logger = MetricsLogger(tmp_path, num_seeds=2)
    rows = [
        {"seed": seed, "period": 1, "update": step, "env_steps": step,
         "train_return": math.nan, "critic_loss": float(step + 10 * seed)}
        for seed in (0, 1) for step in range(1, 2_501)
    ]  # fmt: skip
    logger.log_updates(as_columns(rows))
    logger.close()
    updates = read_csv(tmp_path / "updates.csv")
    assert len(updates["env_steps"]) == 5_000
    for seed in (0, 1):
        scalars = tensorboard_scalars(tmp_path / "tensorboard" / f"seed_{seed}")
        # Mean of steps 1..1000 is 500.5, 1001..2000 is 1500.5, 2001..2500 is 2250.5.
        steps, values = zip(*scalars["train/critic_loss"], strict=True)
        assert steps == (1_000, 2_000, 2_500)
        assert values == pytest.approx(
            [500.5 + 10 * seed, 1_500.5 + 10 * seed, 2_250.5 + 10 * seed]
        )
        assert "train/train_return" not in scalars


def test_columns_are_written_as_a_plain_loop_over_their_values_writes_them(tmp_path):
    """Integers and bools as integers, floats (float32 too) as the ``repr`` of the Python
    float, NaN as an empty cell: byte for byte what ``csv.writer`` writes row by row."""
    rng = np.random.default_rng(1)
    size = 50
    columns = {
        "seed": np.repeat(np.arange(5), 10),
        "period": np.full(size, 3, np.int32),
        "update": np.arange(1, size + 1),
        "env_steps": np.arange(size, dtype=np.int64) * 7,
        "train_return": np.where(rng.random(size) < 0.2, rng.normal(size=size), np.nan),
        "actor_loss": rng.normal(size=size).astype(np.float32) * 1e-7,
        "critic_loss": (rng.normal(size=size) * 1e6).astype(np.float32),
        "rejected": rng.random(size) < 0.5,
        "inf": np.full(size, np.inf),
    }
    path = tmp_path / "updates.csv"
    CsvTable(path, UPDATE_COLUMNS).append(columns)

    def cell(value):
        if isinstance(value, np.floating):
            return "" if np.isnan(value) else repr(float(value))
        return int(value)

    expected = tmp_path / "expected.csv"
    names = [*UPDATE_COLUMNS, "actor_loss", "critic_loss", "inf", "rejected"]
    with open(expected, "w", newline="") as file:
        writer = csv.writer(file)
        writer.writerow(names)
        for i in range(size):
            writer.writerow([cell(columns[name][i]) for name in names])
    assert path.read_bytes() == expected.read_bytes()
