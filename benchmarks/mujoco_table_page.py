"""The MuJoCo table's page: per cell Tianshou's statistic, the final evaluation, the seeds, the
wall time and the machine beside Tianshou's published value, as ``mujoco_table.md``, a
figure, and the blocks the README and the learning page show (``mujoco_table.py --table``).
"""

from __future__ import annotations

import dataclasses
import json
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from common import BENCH_DIR, markdown_table, pyplot, save_figure
from mujoco_table_cells import FULL_BUDGET_STEPS, RESULTS_FILE

from jaxrl.runs.published import SOURCE, TASK_VERSIONS, task_of, tianshou_mujoco


@dataclass(frozen=True)
class CellResult:
    algo: str
    env: str
    seeds: int
    env_steps: int
    max_of_mean: float
    std_at_max: float
    final_mean: float
    final_std: float
    minutes: float
    steps: np.ndarray
    curves: np.ndarray  # [seeds, evaluations]
    commits: tuple[str, ...]
    episodes: tuple[int, ...]
    machines: tuple[str, ...]
    notes: tuple[str, ...] = ()


def cell_results(rows: Sequence[dict[str, Any]]) -> list[CellResult]:
    """One result per (algorithm, task) from full-budget rows; a cell whose rows come from
    more than one preset version or budget is an error."""
    cells: dict[tuple[str, str], list[dict]] = {}
    for row in rows:
        cells.setdefault((row["algo"], row["env"]), []).append(row)
    results = []
    for (algo, env), runs in sorted(cells.items()):
        versions = {(r.get("settings_id"), r["total_steps"]) for r in runs}
        if len(versions) > 1:
            raise SystemExit(
                f"{algo} on {env}: rows from {len(versions)} settings/budgets {sorted(versions)}"
                "; one cell takes one"
            )
        lengths = {len(r["eval_return"]) for r in runs}
        if len(lengths) > 1:
            raise SystemExit(f"{algo} on {env}: rows with different evaluation points")
        curves = np.array([r["eval_return"] for r in runs], float)
        mean = curves.mean(axis=0)
        best = int(np.argmax(mean))
        finals = np.array([r["final_return"] for r in runs], float)
        groups = {(r.get("commit"), r["seconds"], r["seeds_in_process"]) for r in runs}
        results.append(
            CellResult(
                algo=algo,
                env=env,
                seeds=len(runs),
                env_steps=int(runs[0]["env_steps"]),
                max_of_mean=float(mean[best]),
                std_at_max=float(curves[:, best].std()),
                final_mean=float(finals.mean()),
                final_std=float(finals.std()),
                minutes=sum(g[1] for g in groups) / 60,
                steps=np.array(runs[0]["eval_env_steps"], float),
                curves=curves,
                commits=tuple(sorted({_short_commit(r.get("commit")) for r in runs})),
                episodes=tuple(sorted({int(r.get("eval_episodes", 10)) for r in runs})),
                machines=tuple(sorted({_machine_name(r.get("machine")) for r in runs})),
                notes=_resume_notes(runs),
            )
        )
    return results


def _resume_notes(runs: Sequence[dict[str, Any]]) -> tuple[str, ...]:
    """What a cell's rows say of how they were trained: the seeds whose group resumed from a
    checkpoint, and where (a row records its group's last resume)."""
    resumed: dict[int, list[int]] = {}
    for row in runs:
        if row.get("resumed_at_env_steps"):
            resumed.setdefault(int(row["resumed_at_env_steps"]), []).append(int(row["seed"]))
    return tuple(
        f"seed{'s' * (len(seeds) > 1)} {', '.join(map(str, sorted(seeds)))} resumed from a "
        f"checkpoint at {steps:,} "
        "env steps (last resume; fresh environments, as `jaxrl train --resume`)"
        for steps, seeds in sorted(resumed.items())
    )


def read_deviations(source: Path) -> list[dict[str, Any]]:
    """Known deviations of a results file's rows from the cells' settings, committed beside it
    (``<stem>_deviations.json``: a list of ``{"algo", "env", "note"}``), for what the rows
    cannot record (a fault of the code that trained them, found later). None: ``[]``."""
    path = source.with_name(f"{source.stem}_deviations.json")
    if not path.exists():
        return []
    entries = json.loads(path.read_text())
    for i, entry in enumerate(entries):
        missing = {"algo", "env", "note"} - set(entry)
        if missing:
            raise SystemExit(f"{path}: entry {i} lacks {sorted(missing)}")
    return entries


def with_deviations(
    results: Sequence[CellResult], deviations: Sequence[dict[str, Any]]
) -> list[CellResult]:
    """``results`` with each deviation's note added to its cell's notes (a deviation of a
    cell without rows is left out)."""
    out = []
    for r in results:
        extra = tuple(d["note"] for d in deviations if (d["algo"], d["env"]) == (r.algo, r.env))
        out.append(dataclasses.replace(r, notes=(*extra, *r.notes)) if extra else r)
    return out


def _short_commit(commit: str | None) -> str:
    name, _, dirty = str(commit).partition("+")
    return name[:10] + (f"+{dirty}" if dirty else "")


def _machine_name(machine: dict[str, Any] | None) -> str:
    if not machine:
        return "unknown"
    accel = machine.get("accelerator")
    share = machine.get("process_cpus")  # rows of --jobs: a process had a share of the CPUs
    cores = f"{machine['cores']} cores" + (
        f", {share} per process" if share and share < machine["cores"] else ""
    )
    return f"{machine['cpu']} ({cores})" + (f", {accel[0]}" if accel else "")


def _verdict(result: CellResult) -> str:
    published = tianshou_mujoco(result.algo, result.env)
    if published is None:
        return "-"
    if result.env_steps < FULL_BUDGET_STEPS:
        return "shorter run"
    if result.max_of_mean >= published.mean:
        return "above mean"
    return "within 1 std" if result.max_of_mean >= published.mean - published.std else "BELOW"


def table_markdown(results: Sequence[CellResult], source: Path = Path(RESULTS_FILE)) -> str:
    """The whole ``mujoco_table.md``: what the table is, then :func:`table_block`."""
    episodes = "/".join(str(e) for e in sorted({e for r in results for e in r.episodes}))
    commits = sorted({c for r in results for c in r.commits})
    return "\n".join(
        [
            "# jaxrl on Tianshou's MuJoCo benchmark",
            "",
            "Generated by `python benchmarks/mujoco_table.py --table` from "
            f"`benchmarks/results/{source.name}`. Settings: jaxrl's `mujoco` preset "
            "(Tianshou's example scripts), gymnasium's v5 tasks on EnvPool.",
            f"Tianshou: {SOURCE}; gym 0.17.3 with mujoco 2.0 (v3 and v2 tasks).",
            "Statistic (both sides): the maximum over evaluations of the mean across seeds, "
            f"each seed's value the mean of {episodes} test episodes (Tianshou: 10); +- one std "
            "across seeds at that evaluation. 'vs Tianshou' compares it with Tianshou's mean and "
            "mean - 1 std.",
            "",
            table_block(results),
            f"Commits the rows were trained at: {', '.join(commits)}.",
            "",
        ]
    )


# rl-baselines3-zoo's published sb3-contrib TRPO results per task, (mean, std) over 3 seeds on
# the v3 tasks (the sb3-contrib docs' table; shared/reference/tuning-docs-stats.md).
RL_ZOO_TRPO = {
    "HalfCheetah": (1803, 46),
    "Hopper": (3372, 215),
    "Walker2d": (4502, 234),
    "Ant": (3554, 591),
    "Swimmer": (359, 2),
}


@dataclass(frozen=True)
class TunedResult:
    """``--preset mujoco-tuned`` on a task's held-out seeds
    (``results/tuned_heldout_ALGO_TASK.json``): Tianshou's statistic (the maximum over
    evaluations of the mean across seeds, +- the std at that evaluation) and the final
    policy's deterministic evaluation, mean +- std over seeds."""

    seeds: int
    max_of_mean: float
    std_at_max: float
    final_mean: float
    final_std: float


TUNED_RESULTS = BENCH_DIR / "results"  # where tuned_heldout_ALGO_TASK.json are


def tuned_result(task: str, results: Path | None = None, algo: str = "trpo") -> TunedResult | None:
    """The held-out result of ``algo`` 's tuned preset on ``task`` (``"Hopper"``), None
    before its study's best has been trained on held-out seeds."""
    path = (results or TUNED_RESULTS) / f"tuned_heldout_{algo}_{task.lower()}.json"
    if not path.exists():
        return None
    data = json.loads(path.read_text())
    steps = sorted(data["evaluations"], key=int)
    curves = np.array([data["evaluations"][s] for s in steps], float).T  # [seeds, evals]
    mean = curves.mean(axis=0)
    best = int(np.argmax(mean))
    finals = np.array(data["final_deterministic"], float)
    return TunedResult(
        len(finals),
        float(mean[best]),
        float(curves[:, best].std()),
        float(finals.mean()),
        float(finals.std()),
    )


def _tuned_cells(algo: str, task: str) -> list[str]:
    """The tuned columns of a row: the tuned preset on held-out seeds (TRPO, and NPG where
    its study's best has been trained on them) and rl-zoo's published TRPO ("-" for other
    algorithms and tasks)."""
    tuned = tuned_result(task, algo=algo) if algo in ("trpo", "npg") else None
    zoo = "-"
    if algo == "trpo" and task in RL_ZOO_TRPO:
        zoo = "{} +- {}".format(*RL_ZOO_TRPO[task])
    if tuned is None:
        return ["-" if zoo == "-" else "study running", zoo]
    return [
        f"{tuned.max_of_mean:.1f} +- {tuned.std_at_max:.1f}; final "
        f"{tuned.final_mean:.1f} +- {tuned.final_std:.1f} ({tuned.seeds} seeds)",
        zoo,
    ]


def _with_spread(mean: float, std: float, seeds: int) -> str:
    """``mean +- std`` across seeds; a single seed has no spread to show."""
    return f"{mean:.1f} +- {std:.1f}" if seeds > 1 else f"{mean:.1f} (one seed)"


def _seed_counts(algo: str, results: Sequence[CellResult]) -> str:
    """An algorithm's seeds per cell: the usual count, and the tasks that have another
    (``DDPG 3 (Swimmer 1)``)."""
    counts = [r.seeds for r in results]
    usual = max(set(counts), key=lambda n: (counts.count(n), n))
    others = [f"{task_of(r.env)} {r.seeds}" for r in results if r.seeds != usual]
    return f"{algo.upper()} {usual}" + (f" ({', '.join(others)})" if others else "")


def table_block(results: Sequence[CellResult]) -> str:
    """The table itself: a row per cell (footnote marks on cells with notes), the notes, and
    the machines the rows came from (their commits are in ``mujoco_table.md``). What the
    learning page of the benchmarks shows between :data:`BLOCK_BEGIN` and :data:`BLOCK_END`."""
    rows = []
    notes: list[str] = []
    for r in results:
        published = tianshou_mujoco(r.algo, r.env)
        task = task_of(r.env)
        marks = ""
        for note in r.notes:
            notes.append(f"[{len(notes) + 1}] {r.algo.upper()} {r.env}: {note}")
            marks += f" [{len(notes)}]"
        rows.append(
            [
                f"{task} ({r.env.rsplit('-', 1)[1]}; Tianshou {TASK_VERSIONS.get(task, '?')})",
                r.algo.upper() + marks,
                _with_spread(r.max_of_mean, r.std_at_max, r.seeds),
                str(published) if published else "-",
                _verdict(r),
                _with_spread(r.final_mean, r.final_std, r.seeds),
                _final_to_max(r),
                *_tuned_cells(r.algo, task),
                f"{r.seeds}",
                f"{r.env_steps:,}",
                f"{r.minutes:.0f}",
            ]
        )
    headers = [
        "task",
        "algo",
        "jaxrl: max over evaluations of the seeds' mean +- std",
        "Tianshou (10 seeds)",
        "vs Tianshou",
        "jaxrl final evaluation, mean +- std",
        "final / max",
        "tuned (`mujoco-tuned`, held-out seeds): Tianshou's statistic; final",
        "rl-zoo TRPO (3 seeds, final)",
        "seeds",
        "env steps / seed",
        "wall minutes (cell)",
    ]
    machines = sorted({m for r in results for m in r.machines})
    return "\n".join(
        [
            markdown_table(headers, rows),
            "",
            *(f"{note}  " for note in notes),
            *([""] if notes else []),
            "Final / max: the final evaluation's mean over the maximum over evaluations (where "
            "that maximum is positive; Reacher's returns are negative): how much of its best a "
            "cell's final policy keeps.",
            "",
            "Tuned: `--preset mujoco-tuned` (each task's study's best trial, "
            "docs/benchmarks/tuning.md) trained on 10 seeds no search used "
            "(`benchmarks/results/tuned_heldout_ALGO_TASK.json`), deterministic evaluations; "
            "'study running' where that run is not in yet. rl-zoo: sb3-contrib's TRPO with "
            "rl-baselines3-zoo's tuned settings, its published final evaluation (v3 tasks).",
            "",
            f"Machines: {'; '.join(machines)}.",
            "",
        ]
    )


def _final_to_max(r: CellResult) -> str:
    """The final evaluation's mean over the maximum of the seeds' mean, ``"-"`` where that
    maximum is not positive (a ratio of negative returns reads backwards)."""
    return f"{r.final_mean / r.max_of_mean:.2f}" if r.max_of_mean > 0 else "-"


def _short(value: float) -> str:
    """A return as the headline shows it: whole numbers, one decimal below 100."""
    return f"{value:.1f}" if abs(value) < 100 else f"{value:.0f}"


def headline_block(results: Sequence[CellResult]) -> str:
    """The table's headline, as the README shows it between :data:`BLOCK_BEGIN` and
    :data:`BLOCK_END`: a row per task, a column per algorithm, each cell jaxrl's statistic
    against Tianshou's published mean and the verdict; a cell with notes is marked ``*``
    (the notes are under the full table)."""
    algos = [a for a in ("trpo", "npg", "ddpg") if any(r.algo == a for r in results)]
    tasks = sorted({task_of(r.env) for r in results})
    by_cell = {(task_of(r.env), r.algo): r for r in results}
    rows = []
    for task in tasks:
        cells = []
        for algo in algos:
            r = by_cell.get((task, algo))
            published = tianshou_mujoco(r.algo, r.env) if r else None
            if r is None:
                cells.append("-")
                continue
            text = _short(r.max_of_mean)
            if published is not None:
                text += f" vs {_short(published.mean)}: {_verdict(r)}"
            cells.append(text + (" *" if r.notes else ""))
        rows.append([task, *cells])
    seeds = ", ".join(_seed_counts(a, [r for r in results if r.algo == a]) for a in algos)
    return "\n".join(
        [
            markdown_table(["task", *(a.upper() for a in algos)], rows),
            "",
            "jaxrl's maximum over evaluations of the mean across seeds vs Tianshou's published",
            f"mean (seeds: {seeds}); `*`: a cell with notes, under the full table.",
            "",
        ]
    )


# The documents that show the table of the table's own results file, and the block each
# shows: the learning page the whole table, the README its headline. The generated block goes
# between these two lines (``--table`` rewrites it; a test checks it is current).
LEARNING_PAGE = BENCH_DIR.parent / "docs" / "benchmarks" / "learning.md"
SHOWN_IN: dict[Path, Callable[[Sequence[CellResult]], str]] = {
    LEARNING_PAGE: table_block,
    BENCH_DIR.parent / "README.md": headline_block,
}
BLOCK_BEGIN = "<!-- begin: the table as `python benchmarks/mujoco_table.py --table` writes it -->"
BLOCK_END = "<!-- end: the table -->"


def shown_block(document: Path) -> str:
    """The text between :data:`BLOCK_BEGIN` and :data:`BLOCK_END` in ``document``, less the
    blank line after the first and before the second; a SystemExit names the document and
    the markers it lacks."""
    text = document.read_text()
    begin, end = text.find(BLOCK_BEGIN), text.find(BLOCK_END)
    if begin < 0 or end < begin or text.count(BLOCK_BEGIN) != 1 or text.count(BLOCK_END) != 1:
        raise SystemExit(
            f"{document}: needs the table's markers once each, in this order, on lines of "
            f"their own where the table goes:\n  {BLOCK_BEGIN}\n  {BLOCK_END}"
        )
    return text[begin + len(BLOCK_BEGIN) : end].strip("\n")


def show_in(document: Path, block: str) -> bool:
    """Put ``block`` between the markers of ``document`` (:func:`shown_block`); True when
    the document changed."""
    old = shown_block(document)
    if old == block.strip("\n"):
        return False
    text = document.read_text()
    head, rest = text.split(BLOCK_BEGIN)
    tail = rest.split(BLOCK_END)[1]
    document.write_text(f"{head}{BLOCK_BEGIN}\n\n{block.strip(chr(10))}\n\n{BLOCK_END}{tail}")
    return True


def t_quantile_975(dof: int) -> float:
    """Student's t 97.5% quantile (95% two-sided CI), from scipy when available."""
    try:
        from scipy import stats

        return float(stats.t.ppf(0.975, dof))
    except ImportError:  # pragma: no cover - scipy comes with the stack
        return 1.96


def table_figure(results: Sequence[CellResult], path: Path) -> None:
    plt = pyplot()
    if plt is None or not results:
        return
    envs = sorted({r.env for r in results})
    cols = min(4, len(envs))
    nrows = math.ceil(len(envs) / cols)
    fig, axes = plt.subplots(nrows, cols, figsize=(4.6 * cols, 3.5 * nrows), squeeze=False)
    colors = {"trpo": "C0", "npg": "C1", "ddpg": "C2"}
    for ax, env in zip(axes.flat, envs, strict=False):
        for r in results:
            if r.env != env:
                continue
            color = colors.get(r.algo, "C3")
            mean = r.curves.mean(0)
            if r.seeds > 1:
                half = t_quantile_975(r.seeds - 1) * r.curves.std(0, ddof=1) / np.sqrt(r.seeds)
                ax.fill_between(r.steps, mean - half, mean + half, color=color, alpha=0.2)
            ax.plot(r.steps, mean, color=color, label=f"jaxrl {r.algo.upper()} ({r.seeds})")
            published = tianshou_mujoco(r.algo, r.env)
            if published is not None:
                ax.axhspan(
                    published.mean - published.std,
                    published.mean + published.std,
                    color=color,
                    alpha=0.08,
                    hatch="//",
                )
                ax.axhline(published.mean, color=color, ls="--", lw=1)
        ax.set_title(env)
        ax.set_xlabel("env steps")
        ax.xaxis.set_major_formatter(lambda x, _: f"{x / 1e6:g}M")
        ax.set_ylabel("evaluation return")
        ax.legend(fontsize=7)
    for ax in list(axes.flat)[len(envs) :]:
        ax.axis("off")
    fig.suptitle(
        "jaxrl: mean across seeds, band 95% CI\n"
        "Tianshou's published 1M-step result: dashed mean, hatched +- 1 std",
        fontsize=8,
    )
    save_figure(plt, fig, path)


def write_table(
    rows: Sequence[dict[str, Any]],
    out: Path,
    source: Path = Path(RESULTS_FILE),
    documents: Mapping[Path, Callable[[Sequence[CellResult]], str]] | Sequence[Path] = (),
) -> str:
    """The table and figure of ``rows`` (read from the results file ``source``), named
    after it: ``mujoco_table.{md,png}`` for the table's own file, so a results file of
    another setting (``--lr-schedule-updates``) never overwrites them; and in each of
    ``documents`` its block (:func:`show_in`): the block a mapping gives for it (as
    :data:`SHOWN_IN`), or the whole table (:func:`table_block`) for a plain sequence."""
    results = with_deviations(cell_results(rows), read_deviations(source))
    text = table_markdown(results, source)
    (out / f"{source.stem}.md").write_text(text)
    print(f"wrote {out / f'{source.stem}.md'}")
    table_figure(results, out / f"{source.stem}.png")
    if not isinstance(documents, Mapping):
        documents = dict.fromkeys(documents, table_block)
    for document, make_block in documents.items():
        changed = show_in(document, make_block(results))
        print(f"{'updated' if changed else 'unchanged'}: the table in {document}")
    return text
