"""The code stays readable as named steps: no function in jaxrl/ is longer than 80 lines, no
module longer than 500 and at most 7 longer than 400 (split such a module by job, not by
size)."""

from __future__ import annotations

import ast
from pathlib import Path

import jaxrl

LIMIT = 80
MODULE_LIMIT = 500
LONG_MODULE = 400
LONG_MODULES = 7


def test_no_function_is_longer_than_80_lines():
    root = Path(jaxrl.__file__).parent
    long = []
    for path in sorted(root.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                lines = node.end_lineno - node.lineno + 1
                if lines > LIMIT:
                    long.append(f"{path.relative_to(root)}:{node.lineno} {node.name} ({lines})")
    assert not long, "split into named steps: " + ", ".join(long)


def _modules_longer_than(limit: int) -> list[str]:
    root = Path(jaxrl.__file__).parent
    return [
        f"{path.relative_to(root)} ({lines})"
        for path in sorted(root.rglob("*.py"))
        if (lines := len(path.read_text().splitlines())) > limit
    ]


def test_no_module_is_longer_than_500_lines():
    long = _modules_longer_than(MODULE_LIMIT)
    assert not long, "split by job: " + ", ".join(long)


def test_at_most_7_modules_are_longer_than_400_lines():
    long = _modules_longer_than(LONG_MODULE)
    assert len(long) <= LONG_MODULES, "split one by job: " + ", ".join(long)
