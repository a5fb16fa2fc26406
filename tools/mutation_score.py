"""Mutation score per module from mutmut's results (run by tools/mutation.sh).

Prints, for each mutated module, how many mutants were killed, survived, timed out or are not
yet checked, and the score killed / (killed + survived + timeout); then every survivor.
"""

from __future__ import annotations

import collections
import subprocess
import sys


def main() -> int:
    out = subprocess.run(
        ["mutmut", "results", "--all", "true"], capture_output=True, text=True, check=False
    ).stdout
    counts: dict[str, collections.Counter[str]] = collections.defaultdict(collections.Counter)
    survivors = []
    for line in out.splitlines():
        name, sep, status = line.strip().partition(": ")
        if not sep:
            continue
        module = ".".join(name.split(".")[:3])
        counts[module][status] += 1
        if status == "survived":
            survivors.append(name)
    header = f"{'module':32} {'killed':>7} {'survived':>9} {'timeout':>8} {'other':>6} {'score':>7}"
    print(header)
    total: collections.Counter[str] = collections.Counter()
    for module in sorted(counts):
        c = counts[module]
        total.update(c)
        print(_row(module, c))
    print(_row("total", total))
    print("\nsurvivors (mutmut show NAME prints the diff):")
    for name in survivors:
        print(f"  {name}")
    return 0


def _row(module: str, c: collections.Counter[str]) -> str:
    killed, survived, timeout = c["killed"], c["survived"], c["timeout"]
    other = sum(c.values()) - killed - survived - timeout
    checked = killed + survived + timeout
    score = f"{100 * (killed + timeout) / checked:.1f}%" if checked else "-"
    return f"{module:32} {killed:>7} {survived:>9} {timeout:>8} {other:>6} {score:>7}"


if __name__ == "__main__":
    sys.exit(main())
