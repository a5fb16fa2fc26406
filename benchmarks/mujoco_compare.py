"""The MuJoCo table's runs compared over all their tasks at once: ``jaxrl compare --normalize
tianshou`` (:mod:`jaxrl.studies.normalized`) on run directories rebuilt from
``results/mujoco_table.jsonl`` (one per algorithm and task: ``config.json``, ``evals.csv``
and the seeds' final returns as ``final_eval.json``).

Writes ``results/mujoco_compare.txt`` (the command's output) and the normalized performance
profile ``docs/guides/mujoco_profile.png``. Seconds, no training.
"""

from __future__ import annotations

import contextlib
import io
import json
import sys
import tempfile
from pathlib import Path

BENCH_DIR = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH_DIR.parent))

from jaxrl import cli  # noqa: E402

TABLE = BENCH_DIR / "results" / "mujoco_table.jsonl"
OUTPUT = BENCH_DIR / "results" / "mujoco_compare.txt"
PROFILE = BENCH_DIR.parent / "docs" / "guides" / "mujoco_profile.png"


def write_run_dirs(rows: list[dict], root: Path) -> list[Path]:
    """One run directory per (algo, env) of ``rows`` (the table's seeds), in table order."""
    cells: dict[tuple[str, str], list[dict]] = {}
    for row in rows:
        cells.setdefault((row["algo"], row["env"]), []).append(row)
    run_dirs = []
    for (algo, env), seeds in sorted(cells.items()):
        path = root / f"{algo}-{env}"
        path.mkdir(parents=True)
        (path / "config.json").write_text(json.dumps({"algo": algo, "env": env}))
        lines = ["seed,period,env_steps,eval_return,wall_time"]
        for index, row in enumerate(sorted(seeds, key=lambda r: r["seed"])):
            points = zip(row["eval_env_steps"], row["eval_return"], strict=True)
            lines += [f"{index},{p + 1},{s},{r!r}," for p, (s, r) in enumerate(points)]
        (path / "evals.csv").write_text("\n".join(lines) + "\n")
        final = {
            "episodes": seeds[0]["eval_episodes"],
            "env_steps": seeds[0]["env_steps"],
            "deterministic": [r["final_return"] for r in sorted(seeds, key=lambda r: r["seed"])],
            "stochastic": None,
        }
        (path / "final_eval.json").write_text(json.dumps(final))
        run_dirs.append(path)
    return run_dirs


def main() -> None:
    rows = [json.loads(line) for line in TABLE.read_text().splitlines() if line.strip()]
    with tempfile.TemporaryDirectory() as tmp:
        run_dirs = write_run_dirs(rows, Path(tmp))
        argv = ["compare", "--normalize", "tianshou", *map(str, run_dirs)]
        argv += ["-o", str(Path(tmp) / "curves.png"), "--profile", str(PROFILE)]
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            status = cli.main(argv)
    if status != 0:
        raise SystemExit(status)
    text = out.getvalue().replace(tmp, "RUNS").replace(str(BENCH_DIR.parent) + "/", "")
    lines = [line for line in text.splitlines() if not line.startswith("Learning curves:")]
    OUTPUT.write_text(
        "jaxrl compare --normalize tianshou over the MuJoCo table's runs "
        "(python benchmarks/mujoco_compare.py)\n\n" + "\n".join(lines) + "\n"
    )
    print(OUTPUT.read_text(), end="")


if __name__ == "__main__":
    main()
