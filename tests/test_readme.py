"""The README's Python examples are code that CI runs, so they cannot drift from the API.

Every ```python block of README.md is executed, top to bottom, in one namespace (a later
block may use what an earlier one defined, as a reader running them in order would), with
``JAXRL_README_BUDGET=ci``: blocks that train long read it and train less. A failing block
fails the test with a traceback into README.md's own line numbers.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

README = Path(__file__).resolve().parents[1] / "README.md"
# A fenced block: its opening line, its code, its closing fence (at the start of a line).
_BLOCK = re.compile(r"^```python\n(.*?)^```$", re.DOTALL | re.MULTILINE)


def python_blocks(text: str) -> list[tuple[int, str]]:
    """``(first line number, code)`` of every ```python block of ``text``."""
    return [(text.count("\n", 0, m.start(1)) + 1, m.group(1)) for m in _BLOCK.finditer(text)]


def test_python_blocks_are_found():
    text = README.read_text()
    blocks = python_blocks(text)
    assert len(blocks) == text.count("```python") >= 3
    code = "".join(block for _, block in blocks)
    for call in ("make_train(", "make_collector(", ".collect(", "agent.init(", "update("):
        assert call in code, f"README's examples no longer show {call}"


@pytest.mark.slow
def test_readme_python_blocks_run(monkeypatch, capsys):
    monkeypatch.setenv("JAXRL_README_BUDGET", "ci")
    namespace: dict = {"__name__": "__readme__"}
    for first_line, code in python_blocks(README.read_text()):
        # Padded so that tracebacks give README.md's line numbers.
        exec(compile("\n" * (first_line - 1) + code, str(README), "exec"), namespace)
    printed = capsys.readouterr().out
    # The research loop prints the return every 8 updates: it visibly improves.
    returns = [float(r) for r in re.findall(r"^update \d+: return +(-?[\d.]+)", printed, re.M)]
    assert len(returns) == 5, printed
    assert returns[-1] > returns[0] + 200, printed
