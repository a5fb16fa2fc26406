"""How long the ``jaxrl`` command takes to start: each command line in fresh processes,
wall seconds from start to exit, and the heavy modules (JAX, flax, distrax...) it imported.

The commands that neither train nor evaluate (``--help``, a usage error, ``plot``,
``compare``) need no JAX; ``train trpo --help`` reads the algorithms' classes and so imports
it (the floor every training command pays). ``--tree PATH`` (repeatable) times the command of
another checkout (``git worktree add /tmp/before COMMIT``) side by side: its ``jaxrl`` is
imported first (``PYTHONPATH``), runs alternate tree by tree, repetition by repetition.

    python benchmarks/cli_startup.py --run-dir runs/trpo-...         # this checkout
    python benchmarks/cli_startup.py --run-dir runs/trpo-... --tree /tmp/before --tree .
    python benchmarks/cli_startup.py --quick                        # CI smoke run
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from common import (
    BENCH_DIR,
    base_parser,
    command_line,
    loadavg,
    markdown_table,
    output_dir,
    summarize,
    write_json,
)

HEAVY = ("jax", "flax", "optax", "distrax", "orbax", "tensorflow_probability")

# Runs one command line as the console script does, then reports what it imported.
_RUN = (
    "import json, sys\n"
    "from jaxrl.cli import main\n"
    "try:\n"
    "    status = main(sys.argv[1:])\n"
    "except SystemExit as exit_:\n"
    "    status = exit_.code\n"
    "heavy = sorted(m for m in {heavy!r} if m in sys.modules)\n"
    "sys.stderr.write('\\nCLI_STARTUP ' + json.dumps([status, heavy]) + '\\n')\n"
)


def commands(run_dir: Path | None, scratch: Path) -> dict[str, list[str]]:
    """Name -> argv of the command lines timed (``plot`` and ``compare`` with ``run_dir``)."""
    lines = {
        "--help": ["--help"],
        "usage error (trian)": ["trian"],
        "train trpo --help": ["train", "trpo", "--help"],
    }
    if run_dir is not None:
        lines["compare RUN (usage error)"] = ["compare", str(run_dir)]
        lines["plot RUN"] = ["plot", str(run_dir), "-o", str(scratch / "plot.png")]
        lines["compare RUN RUN"] = [
            "compare",
            str(run_dir),
            str(run_dir),
            "-o",
            str(scratch / "c.png"),
        ]
    return lines


def run_once(tree: Path, argv: list[str]) -> tuple[float, int, list[str]]:
    """Wall seconds, exit status and heavy modules of ``jaxrl ARGV`` from ``tree``."""
    env = {**os.environ, "PYTHONPATH": str(tree), "COLUMNS": "100"}
    env.pop("JAXRL_PLUGINS", None)
    start = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-c", _RUN.format(heavy=HEAVY), *argv],
        capture_output=True,
        text=True,
        env=env,
        cwd=tempfile.gettempdir(),
        check=False,
    )
    seconds = time.perf_counter() - start
    report = [line for line in done.stderr.splitlines() if line.startswith("CLI_STARTUP ")]
    if not report:
        raise RuntimeError(f"jaxrl {' '.join(argv)} from {tree} failed:\n{done.stderr[-2000:]}")
    status, heavy = json.loads(report[-1].split(" ", 1)[1])
    return seconds, status, heavy


def imported_from(tree: Path) -> str:
    """Where ``import jaxrl`` finds the package with ``tree`` first on the path."""
    env = {**os.environ, "PYTHONPATH": str(tree)}
    code = "import jaxrl, os; print(os.path.dirname(jaxrl.__file__))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
    return out.stdout.strip()


def main() -> None:
    parser = base_parser(__doc__.split("\n\n")[0])
    parser.add_argument("--run-dir", type=Path, help="a run directory for plot and compare")
    parser.add_argument("--tree", type=Path, action="append", help="a checkout to time")
    parser.add_argument("--repetitions", type=int, default=7)
    args = parser.parse_args()
    repetitions = 1 if args.quick else args.repetitions
    trees = [t.resolve() for t in (args.tree or [BENCH_DIR.parent])]
    for tree in trees:
        found = imported_from(tree)
        if Path(found) != tree / "jaxrl":
            raise SystemExit(f"--tree {tree}: `import jaxrl` finds {found}, not {tree}/jaxrl")
    print(f"Load average at the start: {loadavg()}; {os.cpu_count()} CPUs")
    scratch = Path(tempfile.mkdtemp(prefix="cli-startup-"))
    lines = commands(args.run_dir, scratch)
    samples = {(t, n): [] for t in trees for n in lines}
    seen: dict[tuple[Path, str], tuple[int, list[str]]] = {}
    for rep in range(repetitions):
        for name, argv in lines.items():
            for tree in trees if rep % 2 == 0 else trees[::-1]:
                seconds, status, heavy = run_once(tree, argv)
                samples[(tree, name)].append(seconds)
                seen[(tree, name)] = (status, heavy)
    rows, records = [], []
    for (tree, name), values in samples.items():
        stats = summarize(values)
        status, heavy = seen[(tree, name)]
        rows.append(
            [
                str(tree),
                f"jaxrl {name}",
                f"{stats['median']:.2f}",
                f"{stats['min']:.2f}-{stats['max']:.2f}",
                status,
                ", ".join(heavy) or "none",
            ]
        )
        records.append(
            {
                "tree": str(tree),
                "command": name,
                "seconds": stats,
                "status": status,
                "heavy_modules": heavy,
            }
        )
    headers = ["tree", "command", "wall s (median)", "min-max", "exit", "heavy modules imported"]
    print(markdown_table(headers, rows))
    print(f"Load average at the end: {loadavg()}")
    write_json(
        output_dir(args) / "cli_startup.json",
        {"command": command_line(), "repetitions": repetitions, "results": records},
    )


if __name__ == "__main__":
    main()
