"""The Python examples of the README and of every documentation page are code that CI runs,
so they cannot drift from the API.

Every ```python block of README.md, then of each page under docs/ that has one (today
docs/guides/research.md), is executed, top to
bottom, each document in one namespace of its own (a later block may use what an earlier one
of the same document defined, as a reader running them in order would). Blocks that train
long run with the smaller budgets of ``CI_BUDGETS`` (the pages show the real ones, and carry
no test scaffolding). A failing block fails the test with a traceback into the document's
own line numbers.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
RESEARCH_GUIDE = ROOT / "docs" / "guides" / "research.md"
# Every page of the documentation site with a Python example (built output excluded).
DOC_PAGES = tuple(
    sorted(
        page
        for page in (ROOT / "docs").rglob("*.md")
        if "_build" not in page.parts and "```python" in page.read_text()
    )
)
DOCUMENTS = (README, *DOC_PAGES)
# A fenced block: its opening line, its code, its closing fence (at the start of a line).
_BLOCK = re.compile(r"^```python\n(.*?)^```$", re.DOTALL | re.MULTILINE)


def python_blocks(text: str) -> list[tuple[int, str]]:
    """``(first line number, code)`` of every ```python block of ``text``."""
    return [(text.count("\n", 0, m.start(1)) + 1, m.group(1)) for m in _BLOCK.finditer(text)]


def test_python_blocks_are_found():
    """Every ```python fence of each document is found; the README shows the research loop
    (a collector and the jitted update) and, with the research guide, at least three
    examples that show whole runs, collectors, agent initialization and the update."""
    code = ""
    blocks_found = 0
    for document in DOCUMENTS:
        text = document.read_text()
        blocks = python_blocks(text)
        assert len(blocks) == text.count("```python") >= 1, document
        blocks_found += len(blocks)
        code += "".join(block for _, block in blocks)
    readme = "".join(block for _, block in python_blocks(README.read_text()))
    for call in ("make_collector(", ".collect(", "agent.init(", "update("):
        assert call in readme, f"README's research snippet no longer shows {call}"
    assert blocks_found >= 3
    for call in ("make_train(", "make_collector(", ".collect(", "agent.init(", "update("):
        assert call in code, f"the README's and the research guide's examples no longer show {call}"


# What CI runs instead of a page's budget, per document (text -> replacement, each found in
# the page exactly once): the blocks' plumbing, not their learning (two collections of 16 x 128
# env steps: 24 s where a fifth of the page's budget took 44 s).
CI_BUDGETS = {RESEARCH_GUIDE: {"total_steps=250_000)": "total_steps=4096)"}}


def _ci_text(document: Path) -> str:
    """The document's text with its CI budgets (:data:`CI_BUDGETS`) in place."""
    text = document.read_text()
    for real, smaller in CI_BUDGETS.get(document, {}).items():
        assert text.count(real) == 1, f"{document}: {real!r} is no longer there once"
        text = text.replace(real, smaller)
    return text


def _run_blocks(document: Path) -> None:
    namespace: dict = {"__name__": "__readme__"}
    for first_line, code in python_blocks(_ci_text(document)):
        # Padded so that tracebacks give the document's line numbers.
        exec(compile("\n" * (first_line - 1) + code, str(document), "exec"), namespace)


@pytest.mark.slow
def test_readme_python_blocks_run(capsys):
    _run_blocks(README)
    printed = capsys.readouterr().out
    # The research loop prints the return every 8 updates: it visibly improves.
    returns = [float(r) for r in re.findall(r"^update \d+: return +(-?[\d.]+)", printed, re.M)]
    assert len(returns) == 5, printed
    assert returns[-1] > returns[0] + 200, printed


def test_the_research_guide_is_among_the_pages_run():
    assert RESEARCH_GUIDE in DOC_PAGES


@pytest.mark.slow
@pytest.mark.parametrize(
    "page",
    # The research guide's blocks train 40 updates: 40 s unoptimized, 33 s optimized.
    [pytest.param(p, marks=pytest.mark.optimized) if p == RESEARCH_GUIDE else p for p in DOC_PAGES],
    ids=lambda page: page.name,
)
def test_documentation_python_blocks_run(capsys, page):
    _run_blocks(page)
    printed = capsys.readouterr().out
    if page == RESEARCH_GUIDE:
        assert "return after 40 updates:" in printed, printed
