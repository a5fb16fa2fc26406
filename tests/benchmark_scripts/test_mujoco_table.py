"""The MuJoCo table command's bookkeeping on fixture rows (no training): the plan skips
finished seeds and refuses rows of another setting, and the table generator computes
Tianshou's statistic (the maximum over evaluations of the mean across seeds)."""

from __future__ import annotations

import dataclasses
import json
import sys
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))

import common
import mujoco_table as mt
import mujoco_table_cells as mtc
import mujoco_table_page as mtp


def _row(algo, env, seed, curve, settings_id="abc", total_steps=1_000_000, **extra):
    steps = np.linspace(1_000_000 / len(curve), 998_400, len(curve)).astype(int).tolist()
    return {
        "algo": algo,
        "env": env,
        "seed": seed,
        "total_steps": total_steps,
        "env_steps": steps[-1],
        "eval_env_steps": steps,
        "eval_return": list(curve),
        "final_return": curve[-1],
        "seconds": 600.0,
        "seeds_in_process": 2,
        "settings_id": settings_id,
        "commit": "0123456789abcdef",
        "machine": {"cpu": "Test CPU", "cores": 2, "accelerator": None},
        "eval_episodes": 10,
        **extra,
    }


FIXTURE = [
    _row("trpo", "Hopper-v5", 0, [100.0, 2600.0, 2000.0]),
    _row("trpo", "Hopper-v5", 1, [200.0, 1400.0, 1900.0]),
    _row("npg", "Reacher-v5", 0, [-30.0, -8.0, -9.0]),
]


def test_table_reports_max_over_evaluations_of_the_mean(tmp_path, monkeypatch):
    monkeypatch.setattr(mtp, "TUNED_RESULTS", tmp_path)
    (tmp_path / "rows.jsonl").write_text("".join(json.dumps(r) + "\n" for r in FIXTURE))
    rows = mtc.read_rows(tmp_path / "rows.jsonl")
    results = {r.algo: r for r in mtp.cell_results(rows)}
    hopper = results["trpo"]
    # means over the two seeds: 150, 2000, 1950 -> the second evaluation, std there 600 (not
    # the mean of each seed's best, 2250, nor the final mean, 1950)
    assert hopper.max_of_mean == 2000.0 and hopper.std_at_max == 600.0
    assert hopper.final_mean == 1950.0 and hopper.seeds == 2
    assert hopper.minutes == 10.0  # both seeds came from one 600 s group
    assert mtp._verdict(hopper) == "within 1 std"  # Tianshou's TRPO Hopper: 2046 +- 1038
    assert mtp._verdict(results["npg"]) == "BELOW"  # -8 < -4.5 - 0.5
    text = mtp.write_table(rows, tmp_path)
    hopper_row = (
        "| TRPO | 2000.0 +- 600.0 | 2046 +- 1038 | within 1 std | 1950.0 +- 50.0 | 0.97 "
        "| study running | 3372 +- 215 | 2 |"  # no held-out tuned run in tmp_path
    )
    assert f"| Hopper (v5; Tianshou v3) {hopper_row}" in text
    assert "| Reacher (v5; Tianshou v2) | NPG | -8.0 (one seed) | -4.5 +- 0.5 | BELOW |" in text
    assert "| BELOW | -9.0 (one seed) | - |" in text  # no ratio of negative returns
    assert (tmp_path / "mujoco_table.md").read_text() == text
    assert (tmp_path / "mujoco_table.png").stat().st_size > 0
    # Another results file's table is named after it and leaves the table's own alone.
    other = mtp.write_table(rows[:1], tmp_path, tmp_path / "schedule_3m.jsonl")
    assert "from `benchmarks/results/schedule_3m.jsonl`" in other
    assert (tmp_path / "schedule_3m.md").read_text() == other
    assert (tmp_path / "schedule_3m.png").exists()
    assert (tmp_path / "mujoco_table.md").read_text() == text


def test_table_footnotes_resumed_groups_and_known_deviations(tmp_path):
    """A cell whose rows resumed from a checkpoint, or that a committed deviations file names,
    is marked in the table and its note printed under it; other cells are not marked."""
    rows = [
        _row("ddpg", "Hopper-v5", 0, [100.0, 900.0], resumed_at_env_steps=350_000),
        _row("ddpg", "Hopper-v5", 1, [100.0, 700.0], resumed_at_env_steps=350_000),
        _row("ddpg", "Hopper-v5", 2, [100.0, 800.0], resumed_at_env_steps=None),
        *FIXTURE,
    ]
    source = tmp_path / "rows.jsonl"
    text = mtp.write_table(rows, tmp_path, source)
    assert "| Hopper (v5; Tianshou v3) | DDPG [1] |" in text
    assert "| TRPO |" in text and "| NPG |" in text  # unmarked
    assert "[1] DDPG Hopper-v5: seeds 0, 1 resumed from a checkpoint at 350,000 env steps" in text
    assert "[2]" not in text
    (one,) = mtp._resume_notes([{"seed": 2, "resumed_at_env_steps": 900_000}])
    assert one.startswith("seed 2 resumed from a checkpoint at 900,000 env steps")
    deviation = {"algo": "ddpg", "env": "Hopper-v5", "note": "warm-up ran twice"}
    other = {"algo": "npg", "env": "Ant-v5", "note": "a cell without rows"}
    (tmp_path / "rows_deviations.json").write_text(json.dumps([deviation, other]))
    text = mtp.write_table(rows, tmp_path, source)
    assert "| DDPG [1] [2] |" in text
    assert "[1] DDPG Hopper-v5: warm-up ran twice" in text
    assert "[2] DDPG Hopper-v5: seeds 0, 1 resumed" in text
    assert "a cell without rows" not in text
    (tmp_path / "rows_deviations.json").write_text(json.dumps([{"algo": "ddpg", "env": "x"}]))
    with pytest.raises(SystemExit, match=r"rows_deviations.json: entry 0 lacks \['note'\]"):
        mtp.write_table(rows, tmp_path, source)


def test_the_committed_deviations_name_cells_of_the_table():
    """Each entry of the table's own deviations file names a cell the table can have."""
    source = Path(mt.__file__).parent / "results" / mtc.RESULTS_FILE
    entries = mtp.read_deviations(source)
    cells = {(a, e) for a, e in mt.select_cells(mt.parse_args(["--cells", "all"]))}
    assert entries and all((d["algo"], d["env"]) in cells for d in entries)


def test_the_learning_page_and_the_readme_show_the_table_of_the_committed_results():
    """The learning page of the benchmarks (the whole table) and the README (its headline)
    show, between their marker lines, exactly what ``--table`` generates from the committed
    results file and deviations: a row added without regenerating the table, or a table
    edited by hand, fails here."""
    source = mt.BENCH_DIR / "results" / mtc.RESULTS_FILE
    results = mtp.with_deviations(
        mtp.cell_results(mtc.read_rows(source)), mtp.read_deviations(source)
    )
    repo = mt.BENCH_DIR.parent
    assert mtp.SHOWN_IN == {
        repo / "docs" / "benchmarks" / "learning.md": mtp.table_block,
        repo / "README.md": mtp.headline_block,
    }
    assert "| Hopper (v5; Tianshou v3) | TRPO |" in mtp.table_block(results)
    assert "| Hopper | 1851 vs 2046: within 1 std |" in mtp.headline_block(results)
    for document, make_block in mtp.SHOWN_IN.items():
        assert mtp.shown_block(document) == make_block(results).strip("\n"), (
            f"{document} shows another table: run python benchmarks/mujoco_table.py --table"
        )


def test_the_headline_shows_each_task_once_with_each_algorithm_against_tianshou():
    """The README's headline: a row per task, a column per algorithm, jaxrl's statistic
    against Tianshou's published mean with the verdict, ``*`` on a cell with notes, ``-``
    where a task has no cell of an algorithm."""
    rows = [
        _row("ddpg", "Hopper-v5", 0, [100.0, 900.0], resumed_at_env_steps=350_000),
        *FIXTURE,
    ]
    block = mtp.headline_block(mtp.cell_results(rows))
    assert block.startswith("| task | TRPO | NPG | DDPG |\n|---|---|---|---|\n")
    assert "| Hopper | 2000 vs 2046: within 1 std | - | 900 vs 2197: BELOW * |" in block
    assert "| Reacher | - | -8.0 vs -4.5: BELOW | - |" in block
    assert "(seeds: TRPO 2, NPG 1, DDPG 1)" in block


def test_a_cell_of_one_seed_shows_no_spread_and_the_headline_names_its_count():
    """One seed has no spread: its cell says so rather than ``+- 0.0``; the headline gives an
    algorithm's usual seed count and names the tasks that have another."""
    rows = [
        *(_row("ddpg", "Hopper-v5", seed, [100.0, 900.0]) for seed in range(3)),
        _row("ddpg", "Swimmer-v5", 0, [100.0, 140.0, 130.0]),
    ]
    results = mtp.cell_results(rows)
    table = mtp.table_block(results)
    assert "| 140.0 (one seed) | 144.1 +- 6.5 | within 1 std | 130.0 (one seed) |" in table
    assert "| 900.0 +- 0.0 | 2197 +- 972 | BELOW | 900.0 +- 0.0 |" in table
    assert "(seeds: DDPG 3 (Swimmer 1))" in mtp.headline_block(results)


def test_the_table_is_rewritten_between_its_markers_only(tmp_path, capsys):
    """``write_table`` puts the table's block between a document's markers, keeps the rest of
    the document, leaves a current document as it is, and refuses a document without them."""
    (tmp_path / "rows.jsonl").write_text("".join(json.dumps(r) + "\n" for r in FIXTURE))
    rows = mtc.read_rows(tmp_path / "rows.jsonl")
    doc = tmp_path / "doc.md"
    doc.write_text(f"# Title\n\nbefore\n\n{mtp.BLOCK_BEGIN}\nold table\n{mtp.BLOCK_END}\n\nafter\n")
    mtp.write_table(rows, tmp_path, tmp_path / "rows.jsonl", documents=[doc])
    text = doc.read_text()
    block = mtp.table_block(mtp.cell_results(rows))
    assert text.startswith(f"# Title\n\nbefore\n\n{mtp.BLOCK_BEGIN}\n\n| task | algo |")
    assert text.endswith(f"Machines: Test CPU (2 cores).\n\n{mtp.BLOCK_END}\n\nafter\n")
    assert "Commits" not in text  # the commits are in mujoco_table.md, not in the documents
    assert "Commits the rows were trained at: 0123456789." in (tmp_path / "rows.md").read_text()
    assert "old table" not in text and mtp.shown_block(doc) == block.strip("\n")
    assert "| Hopper (v5; Tianshou v3) | TRPO | 2000.0 +- 600.0 |" in text
    assert "updated: the table in" in capsys.readouterr().out
    mtp.write_table(rows, tmp_path, tmp_path / "rows.jsonl", documents=[doc])
    assert doc.read_text() == text and "unchanged: the table in" in capsys.readouterr().out
    doc.write_text(f"no markers\n{mtp.BLOCK_END}\n")
    with pytest.raises(SystemExit, match=r"doc.md: needs the table's markers once each"):
        mtp.write_table(rows, tmp_path, tmp_path / "rows.jsonl", documents=[doc])


def test_table_refuses_a_cell_of_two_settings():
    rows = [*FIXTURE, _row("trpo", "Hopper-v5", 2, [1.0, 2.0, 3.0], settings_id="other")]
    with pytest.raises(SystemExit, match="trpo on Hopper-v5: rows from 2 settings"):
        mtp.cell_results(rows)


def test_a_short_run_is_not_compared_as_a_full_one():
    row = _row("trpo", "Hopper-v5", 0, [5000.0], total_steps=2048)
    row["env_steps"] = 2048
    (result,) = mtp.cell_results([row])
    assert mtp._verdict(result) == "shorter run"


def test_read_rows_leaves_out_a_line_cut_short(tmp_path, capsys):
    path = tmp_path / "rows.jsonl"
    path.write_text(json.dumps(FIXTURE[0]) + "\n" + json.dumps(FIXTURE[1])[:40])
    assert mtc.read_rows(path) == [FIXTURE[0]]
    assert "not a whole JSON line" in capsys.readouterr().out
    mtc.append_rows(path, [FIXTURE[2]])  # the cut line stays on its own line
    assert mtc.read_rows(path) == [FIXTURE[0], FIXTURE[2]]


@pytest.mark.parametrize(
    ("line", "why"),
    [
        ('{"algo": "trpo", "env" 3, "seed": 1}', "line 2: not JSON"),
        ("garbage", "line 2: not JSON"),
        ("[1, 2]", "line 2: not an object with algo, env, seed"),
        ('{"algo": "trpo"}', "line 2: not an object with algo, env, seed"),
    ],
)
def test_read_rows_stops_at_a_damaged_line_naming_the_file(tmp_path, line, why):
    """A line that is not a row and was not cut short by a kill is damage: one line naming
    the file, the line and what to do (the rows after it are not dropped silently)."""
    path = tmp_path / "rows.jsonl"
    path.write_text(json.dumps(FIXTURE[0]) + "\n" + line + "\n" + json.dumps(FIXTURE[2]) + "\n")
    with pytest.raises(SystemExit) as exit_:
        mtc.read_rows(path)
    message = str(exit_.value.code)
    assert message.startswith(f"error: {path} is damaged ({why}")
    assert message.endswith("; restore it from a copy, or remove that line (its seeds train again)")
    assert "\n" not in message


def test_consecutive_groups():
    assert mt.consecutive_groups([0, 1, 2, 3, 4], 2) == [[0, 1], [2, 3], [4]]
    assert mt.consecutive_groups([5, 1, 2, 7, 8, 9], 5) == [[1, 2], [5], [7, 8, 9]]
    assert mt.consecutive_groups([], 3) == []


def _cell(algo="trpo", env="Hopper-v5", total_steps=1_000_000):
    args = SimpleNamespace(
        eval_episodes=10,
        eval_every=None,
        env_backend="auto",
        hyperparameters={},
        lr_schedule_updates=None,
    )
    return mtc.make_cell(algo, env, total_steps, args)


def test_plan_skips_finished_seeds_and_refuses_other_settings():
    cell = _cell()
    assert cell.settings_id == _cell().settings_id  # a hash of the resolved settings
    assert cell.settings_id != _cell(algo="npg").settings_id
    done = [_row("trpo", "Hopper-v5", s, [1.0], settings_id=cell.settings_id) for s in (0, 1, 3)]
    args = SimpleNamespace(results=Path("r.jsonl"), seeds_per_process=2)
    plan = mt.make_plan([cell], {"trpo": list(range(6))}, done, args)
    assert [seeds for _, seeds in plan.groups] == [[2], [4, 5]]
    assert plan.done[("trpo", "Hopper-v5")] == 3
    other = [_row("trpo", "Hopper-v5", 0, [1.0], settings_id="other")]
    with pytest.raises(SystemExit, match="refusing to mix them into one cell"):
        mt.make_plan([cell], {"trpo": [0, 1]}, other, args)
    shorter = [_row("trpo", "Hopper-v5", 0, [1.0], settings_id=cell.settings_id, total_steps=5)]
    with pytest.raises(SystemExit, match="total_steps 5"):
        mt.make_plan([cell], {"trpo": [0, 1]}, shorter, args)


def test_cell_sets_cover_tianshous_table():
    assert len(mtc.CELL_SETS["trpo-npg"]) == 14 and len(mtc.CELL_SETS["ddpg"]) == 7
    assert all(mtp.tianshou_mujoco(a, e) is not None for a, e in mtc.CELL_SETS["all"])


def test_a_resized_schedule_is_a_setting_of_its_own():
    """--lr-schedule-updates: the agent's linear schedule sized for that many updates (at the
    1M run's last update, 976, Tianshou's 3,000-update schedule leaves 2/3 of the rate), and
    the cell's settings_id differs from the preset's, so its rows never join the preset's."""
    preset = mtc.make_cell("npg", "Reacher-v5", 1_000_000, mt.parse_args([]))
    resized = mtc.make_cell(
        "npg", "Reacher-v5", 1_000_000, mt.parse_args(["--lr-schedule-updates", "3000"])
    )
    assert resized.settings_id != preset.settings_id
    assert resized.settings["lr_schedule_updates"] == 3000
    assert "lr_schedule_updates" not in preset.settings
    np.testing.assert_allclose(float(resized.make_agent().lr_schedule(976)), 1 - 976 / 3000)
    assert float(preset.make_agent().lr_schedule(976)) == 0.0
    with pytest.raises(SystemExit, match="--lr-schedule-updates must be a positive integer"):
        mtc.make_cell("npg", "Reacher-v5", 1_000_000, mt.parse_args(["--lr-schedule-updates", "0"]))
    with pytest.raises(SystemExit, match="no linear lr_schedule"):
        mtc.make_cell("ddpg", "Hopper-v5", 1_000_000, mt.parse_args(["--lr-schedule-updates", "9"]))


def test_another_task_version_is_a_cell_of_its_own_in_its_own_file(tmp_path):
    """--envs Ant-v3 runs the Ant cells on EnvPool's v3 (no contact forces, as Tianshou's
    mujoco-py 2.0); such rows, and a resized schedule's, never go into the table's file."""
    args = mt.parse_args(["--envs", "Ant-v3", "Hopper-v5", "--algos", "trpo"])
    assert sorted(mt.select_cells(args)) == [("trpo", "Ant-v3"), ("trpo", "Hopper-v5")]
    cell = mtc.make_cell("trpo", "Ant-v3", 1_000_000, args)
    assert cell.env == "Ant-v3" and cell.config.env == "Ant-v3"
    args.results = tmp_path / mtc.RESULTS_FILE
    with pytest.raises(SystemExit, match="--envs Ant-v3: not the table's v5 tasks"):
        mt.check_own_results_file(mt.select_cells(args), args)
    args.results = tmp_path / "ant_v3.jsonl"
    mt.check_own_results_file(mt.select_cells(args), args)  # its own file: accepted
    table = mt.parse_args(["--lr-schedule-updates", "3000"])
    table.results = tmp_path / mtc.RESULTS_FILE
    with pytest.raises(SystemExit, match="--lr-schedule-updates: a setting of its own"):
        mt.check_own_results_file(mt.select_cells(table), table)
    plain = mt.parse_args([])
    plain.results = tmp_path / mtc.RESULTS_FILE
    mt.check_own_results_file(mt.select_cells(plain), plain)  # Tianshou's cells: accepted


def test_envs_that_name_no_table_task_or_one_task_twice_are_refused():
    with pytest.raises(SystemExit, match=r"--envs Foo-v1: not a task of --cells all"):
        mt.select_cells(mt.parse_args(["--envs", "Hopper-v5", "Foo-v1"]))
    with pytest.raises(SystemExit, match=r"--envs Humanoid-v5: not a task of --cells ddpg"):
        mt.select_cells(mt.parse_args(["--cells", "ddpg", "--envs", "Humanoid-v5"]))
    with pytest.raises(SystemExit, match="--envs Ant-v3 Ant-v5: two versions of one task"):
        mt.select_cells(mt.parse_args(["--envs", "Ant-v3", "Ant-v5"]))


def test_a_group_is_timed_by_its_cell_else_by_its_algorithms_other_tasks():
    hopper, cheetah = _cell(env="Hopper-v5"), _cell(env="HalfCheetah-v5")

    def timed(cell, env, rate, algo="trpo", total_steps=1_000_000):
        row = _row(algo, env, 0, [1.0], settings_id=cell.settings_id, total_steps=total_steps)
        return {**row, "env_steps_per_second": rate}

    assert mtc.estimate_seconds(hopper, 3, []) is None
    # DDPG's rate says nothing of TRPO's, nor a run of another budget of a full one.
    others = [
        timed(hopper, "Hopper-v5", 1.0, algo="ddpg"),
        timed(hopper, "Hopper-v5", 1.0, total_steps=5),
    ]
    assert mtc.estimate_seconds(cheetah, 3, others) is None
    rows = [timed(hopper, "Hopper-v5", 2_000.0), timed(hopper, "Hopper-v5", 4_000.0)]
    seconds, basis = mtc.estimate_seconds(cheetah, 3, rows)
    assert seconds == pytest.approx(3 * 1_000_000 / 3_000.0)  # the median rate
    assert "other tasks" in basis
    rows.append(timed(cheetah, "HalfCheetah-v5", 10_000.0))
    seconds, basis = mtc.estimate_seconds(cheetah, 3, rows)
    assert seconds == pytest.approx(3 * 1_000_000 / 10_000.0)  # its own cell's rate first
    assert basis == "at the rate measured so far"


def test_a_group_is_timed_by_groups_of_its_size_first():
    """A group's rate in all grows with its seeds, not in proportion: a 1-seed group is
    timed by the 1-seed groups when there are some."""
    cheetah = _cell(env="HalfCheetah-v5")

    def timed(rate, seeds_in_process):
        row = _row("trpo", "HalfCheetah-v5", 0, [1.0], settings_id=cheetah.settings_id)
        return {**row, "env_steps_per_second": rate, "seeds_in_process": seeds_in_process}

    rows = [timed(300.0, 3), timed(180.0, 1)]
    seconds, basis = mtc.estimate_seconds(cheetah, 1, rows)
    assert seconds == pytest.approx(1_000_000 / 180.0)
    assert basis == "at the rate measured so far, groups of 1"
    seconds, basis = mtc.estimate_seconds(cheetah, 3, rows)
    assert seconds == pytest.approx(3 * 1_000_000 / 300.0)
    seconds, basis = mtc.estimate_seconds(cheetah, 2, rows)  # no group of 2: all of them
    assert seconds == pytest.approx(2 * 1_000_000 / 240.0)
    assert basis == "at the rate measured so far"


def test_a_stopped_group_is_timed_by_its_own_recent_rate(tmp_path):
    """A group that resumes is timed by its own evaluations on this machine (the last
    RATE_WINDOW periods, so a fast warm-up or another machine's rows do not count); the
    rows of earlier groups only when it has fewer than two periods."""
    cheetah = _cell(env="HalfCheetah-v5")
    row = _row("trpo", "HalfCheetah-v5", 0, [1.0], settings_id=cheetah.settings_id)
    rows = [{**row, "env_steps_per_second": 10_000.0, "seeds_in_process": 2}]
    # Two seeds, one row each per period: 1,000 env steps per second per seed in the first
    # 3 periods (a warm-up), then 100 for RATE_WINDOW periods.
    walls = [0.5 + 5.0 * p for p in range(4)]
    walls += [walls[-1] + 50.0 * p for p in range(1, mtc.RATE_WINDOW + 1)]
    lines = ["seed,period,env_steps,eval_return,wall_time"]
    lines += [f"{s},{p},{5000 * p},1.0,{wall}" for p, wall in enumerate(walls) for s in (0, 1)]
    (tmp_path / "evals.csv").write_text("\n".join(lines[:5]) + "\n")
    assert mtc.group_rate(tmp_path) is None  # one period after the initial evaluation
    assert mtc.estimate_seconds(cheetah, 2, rows, tmp_path)[0] == pytest.approx(200.0)
    (tmp_path / "evals.csv").write_text("\n".join(lines) + "\n")
    assert mtc.group_rate(tmp_path) == (pytest.approx(100.0), 5000 * mtc.RATE_WINDOW)
    seconds, basis = mtc.estimate_seconds(cheetah, 2, rows, tmp_path)
    assert seconds == pytest.approx(1_000_000 / 100.0)
    assert basis == f"at its own rate over {5000 * mtc.RATE_WINDOW:,} env steps"
    assert mtc.group_rate(tmp_path / "missing") is None


@pytest.mark.parametrize("periods", ["0", "-2"])
def test_stop_after_periods_below_one_is_refused(periods, capsys):
    with pytest.raises(SystemExit):
        mt.parse_args(["--stop-after-periods", periods])
    assert f"--stop-after-periods must be at least 1, got {periods}" in capsys.readouterr().err


def _plan_calls(monkeypatch, tmp_path, minutes, out_of_budget=(), jobs=1, only=None):
    """Run ``run_plan`` over three groups without training: HalfCheetah estimated at 300
    minutes, Hopper at 30, Walker2d (a resized schedule, which cannot checkpoint) at 300.
    Returns the groups ``train_group`` was called for, in order."""
    hopper, cheetah = _cell(env="Hopper-v5"), _cell(env="HalfCheetah-v5")
    walker = dataclasses.replace(_cell(env="Walker2d-v5"), schedule_updates=3_000)
    minutes_of = {"Hopper-v5": 30, "HalfCheetah-v5": 300, "Walker2d-v5": 300}
    calls = []

    def train_group(cell, seeds, deadline, provenance, path, stop_after_periods, preempted=None):
        calls.append(cell.env)
        if cell.env in out_of_budget:
            raise mtc.Deadline()
        return None  # stopped, resumable

    monkeypatch.setattr(mt, "train_group", train_group)
    monkeypatch.setattr(
        mt, "estimate_seconds", lambda c, n, r, path=None: (60 * minutes_of[c.env], "x")
    )
    monkeypatch.setattr(mt, "machine_info", lambda: {"cpu": "Test", "cores": 2,
                        "memory_gib": 1, "jax": "0", "jax_backend": "cpu"})  # fmt: skip
    monkeypatch.setattr(mt, "print_machine", lambda info: None)
    plan = mt.Plan(groups=[(cheetah, [0, 1, 2]), (hopper, [0, 1, 2]), (walker, [0, 1, 2])])
    if only is not None:
        plan.groups = [g for g in plan.groups if g[0].env in only]
    args = SimpleNamespace(
        budget_minutes=minutes, results=tmp_path / "rows.jsonl", stop_after_periods=None, jobs=jobs
    )
    mt.run_plan(plan, args, [])
    return calls


def test_a_group_longer_than_the_budget_waits_for_those_that_fit_then_starts(
    monkeypatch, tmp_path, capsys
):
    """A cell longer than any call's budget still advances: it starts once the groups
    that fit have run (it checkpoints at the deadline); one that cannot checkpoint does not."""
    assert _plan_calls(monkeypatch, tmp_path, 120) == ["Hopper-v5", "HalfCheetah-v5"]
    out = capsys.readouterr().out
    assert "later: ddpg" not in out and "later: trpo HalfCheetah-v5 seeds [0, 1, 2]" in out
    assert "nothing else fits: trpo HalfCheetah-v5 starts" in out
    # Without a budget every group runs in order; a spent budget stops the run.
    assert _plan_calls(monkeypatch, tmp_path, None) == [
        "HalfCheetah-v5", "Hopper-v5", "Walker2d-v5"
    ]  # fmt: skip
    assert _plan_calls(monkeypatch, tmp_path, 120, out_of_budget=("Hopper-v5",)) == ["Hopper-v5"]


def test_a_run_killed_after_a_groups_rows_removes_its_directory_next_time(tmp_path):
    """Rows are written before the group's run directory is removed; a kill between the two
    leaves the directory, which the next run removes (a group still missing seeds keeps it)."""
    results, runs = tmp_path / "rows.jsonl", tmp_path / "rows_runs"
    done, open_ = "trpo-InvertedPendulum-v5-seeds-0-1-abc", "ddpg-Hopper-v5-seeds-0-2-abc"
    for name in (done, open_):
        (runs / name).mkdir(parents=True)
    rows = [_row("trpo", "InvertedPendulum-v5", s, [1.0]) for s in (0, 1)]
    rows += [_row("ddpg", "Hopper-v5", 0, [1.0])]
    mtc.remove_recorded_groups(results, rows)
    assert [p.name for p in runs.iterdir()] == [open_]


@pytest.mark.parametrize("extra", [0, 1])
def test_jobs_outside_one_to_the_cpus_are_refused(extra, capsys):
    cpus = len(mt.usable_cpus())
    jobs = 0 if extra == 0 else cpus + 1
    with pytest.raises(SystemExit):
        mt.parse_args(["--jobs", str(jobs)])
    assert f"--jobs must be from 1 to this process's {cpus} CPUs, got {jobs}" in (
        capsys.readouterr().err
    )


def test_a_row_of_a_process_with_a_share_of_the_cpus_says_so():
    machine = {"cpu": "Test CPU", "cores": 4, "accelerator": None}
    assert mtp._machine_name({**machine, "process_cpus": 2}) == "Test CPU (4 cores, 2 per process)"
    assert mtp._machine_name({**machine, "process_cpus": 4}) == "Test CPU (4 cores)"
    assert mtp._machine_name(machine) == "Test CPU (4 cores)"  # rows from before --jobs


def test_the_commit_is_dirty_when_the_training_code_differs_not_the_results(tmp_path, monkeypatch):
    """Rows record ``<commit>+dirty`` when a tracked file of jaxrl/ or benchmarks/ differs
    from the commit; the results the table writes (benchmarks/results/) and other files do
    not count. (The paths were once taken from benchmarks/ itself, so it never said so.)"""
    import subprocess

    files = {
        "jaxrl/a.py": "a = 1\n",
        "benchmarks/b.py": "b = 1\n",
        "benchmarks/results/r.jsonl": "{}\n",
        "README.md": "x\n",
    }
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)

    def git(*argv):
        identity = ["-c", "user.name=t", "-c", "user.email=t@t"]
        subprocess.run(["git", *identity, *argv], cwd=tmp_path, check=True, capture_output=True)

    git("init", "-q")
    git("add", ".")
    git("commit", "-qm", "fixture")

    def git_commit():
        return common.git_commit(mt.TRAINING_CODE, cwd=tmp_path / "benchmarks")

    assert len(git_commit()) == 40  # clean
    (tmp_path / "benchmarks/results/r.jsonl").write_text("{}\n{}\n")
    (tmp_path / "README.md").write_text("y\n")
    assert len(git_commit()) == 40  # results and other files do not count
    for name in ("benchmarks/b.py", "jaxrl/a.py"):
        (tmp_path / name).write_text("changed = 2\n")
        assert git_commit().endswith("+dirty"), name
        git("checkout", "--", name)


def test_a_group_left_alone_trains_in_the_tables_process_on_every_cpu(monkeypatch, tmp_path):
    """``--jobs 2`` with one group to train: no process of its own, no share (the group in
    a process pinned to half the CPUs would leave the rest idle); it trains here."""
    started = []
    monkeypatch.setattr(mt, "run_in_processes", lambda *a, **k: started.append(a))
    assert _plan_calls(monkeypatch, tmp_path, None, jobs=2, only=("Hopper-v5",)) == ["Hopper-v5"]
    assert started == []
    assert _plan_calls(monkeypatch, tmp_path, None, jobs=2) == []  # three: side by side
    assert len(started) == 1 and started[0][1] == 2  # at most 2 at once


def test_the_tuned_column_is_the_held_out_runs_statistic(tmp_path):
    """A tuned cell: Tianshou's statistic over the held-out seeds' evaluations (the maximum
    over evaluations of the mean across seeds, with the std there) and the final
    deterministic evaluation; None before the held-out run is in."""
    evaluations = {"0": [1.0, 3.0], "100": [10.0, 30.0], "50": [40.0, 20.0]}
    (tmp_path / "tuned_heldout_trpo_hopper.json").write_text(
        json.dumps({"evaluations": evaluations, "final_deterministic": [8.0, 12.0]})
    )
    tuned = mtp.tuned_result("Hopper", tmp_path)
    assert (tuned.seeds, tuned.max_of_mean, tuned.std_at_max) == (2, 30.0, 10.0)
    assert (tuned.final_mean, tuned.final_std) == (10.0, 2.0)
    assert mtp.tuned_result("Walker2d", tmp_path) is None
    assert mtp._tuned_cells("ddpg", "Hopper") == ["-", "-"]
    assert mtp._tuned_cells("trpo", "Reacher") == ["-", "-"]
