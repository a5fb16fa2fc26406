"""Mutation score per module from mutmut's results (run by tools/mutation.sh).

For each mutated module: mutants killed (a selected test failed), timed out (counted as
detected: the mutant made a test run far longer, e.g. a hypothesis search shrinking a failure),
survived, with no test calling the mutated function, and not yet checked. The score is
(killed + timeout) / (killed + timeout + survived + no tests). Then every undetected mutant.
"""

from __future__ import annotations

import collections
import subprocess
import sys

COLUMNS = ("killed", "timeout", "survived", "no tests", "not checked")


def main() -> int:
    out = subprocess.run(
        ["mutmut", "results", "--all", "true"], capture_output=True, text=True, check=False
    ).stdout
    counts: dict[str, collections.Counter[str]] = collections.defaultdict(collections.Counter)
    undetected = []
    for line in out.splitlines():
        name, sep, status = line.strip().partition(": ")
        if not sep:
            continue
        module = ".".join(name.split(".")[:3])
        counts[module][status] += 1
        if status in ("survived", "no tests"):
            undetected.append(f"{name}: {status}")
    print(f"{'module':26}" + "".join(f"{c:>12}" for c in COLUMNS) + f"{'score':>8}")
    total: collections.Counter[str] = collections.Counter()
    for module in sorted(counts):
        total.update(counts[module])
        print(_row(module, counts[module]))
    print(_row("total", total))
    print("\nundetected mutants (`mutmut show NAME` prints the diff):")
    for line in undetected:
        print(f"  {line}")
    return 0


def _row(module: str, c: collections.Counter[str]) -> str:
    detected = c["killed"] + c["timeout"]
    checked = detected + c["survived"] + c["no tests"]
    score = f"{100 * detected / checked:.1f}%" if checked else "-"
    other = sum(c.values()) - sum(c[k] for k in COLUMNS[:-1])
    cells = [c[k] for k in COLUMNS[:-1]] + [other]
    return f"{module:26}" + "".join(f"{n:>12}" for n in cells) + f"{score:>8}"


if __name__ == "__main__":
    sys.exit(main())
