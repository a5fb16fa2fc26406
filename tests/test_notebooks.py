"""The notebooks in notebooks/ are documentation that CI runs.

Each notebook is executed top to bottom in a fresh Jupyter kernel on the CI budget
(``JAXRL_NOTEBOOK_BUDGET=ci``: every cell, a tiny number of env steps); the first failing cell
fails the test with its traceback. The committed notebooks keep the outputs of a full-budget
run (plots embedded as PNG) so they read well on a code host; that is checked too.

Refresh the saved outputs after changing a notebook, from the repository root:
``jupyter execute --inplace notebooks/NAME.ipynb``, with the default (full) budget.
"""

from __future__ import annotations

from pathlib import Path

import pytest

# Jupyter comes with the test extra; a machine without it (a GPU image) skips these, named.
nbformat = pytest.importorskip("nbformat", reason="needs the test extra: pip install -e '.[test]'")
NotebookClient = pytest.importorskip("nbclient", reason="needs the test extra").NotebookClient

NOTEBOOK_DIR = Path(__file__).resolve().parents[1] / "notebooks"
NOTEBOOKS = sorted(NOTEBOOK_DIR.glob("*.ipynb"))
EXPECTED = {"quickstart", "research_update", "multi_seed_sweep", "ddpg_gymnasium"}
CELL_TIMEOUT_S = 600


def code_cells(path: Path) -> list:
    notebook = nbformat.read(path, as_version=4)
    nbformat.validate(notebook)
    return [cell for cell in notebook.cells if cell.cell_type == "code"]


def test_the_notebooks_are_all_there():
    assert {path.stem for path in NOTEBOOKS} >= EXPECTED


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda path: path.stem)
def test_saved_outputs_come_from_a_full_budget_run(path):
    cells = code_cells(path)
    counts = [cell.execution_count for cell in cells]
    assert counts == list(range(1, len(cells) + 1)), (
        f"{path.name}: cells were not run once, top to bottom, in a fresh kernel: {counts}"
    )
    outputs = [output for cell in cells for output in cell.outputs]
    errors = [output for output in outputs if output.output_type == "error"]
    assert not errors, f"{path.name} was saved with an error: {errors[0].get('ename')}"
    assert any("image/png" in output.get("data", {}) for output in outputs), (
        f"{path.name} was saved without a plot"
    )
    printed = "".join(output.get("text", "") for output in cells[0].outputs)
    assert "budget: full" in printed, f"{path.name}: saved outputs are not from the full budget"


@pytest.mark.slow
@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda path: path.stem)
def test_notebook_runs_top_to_bottom_on_the_ci_budget(path, tmp_path, monkeypatch):
    # The kernel inherits this process's environment.
    # (It compiles without most optimizations: JAX_DISABLE_MOST_OPTIMIZATIONS, tests/conftest.py.)
    monkeypatch.setenv("JAXRL_NOTEBOOK_BUDGET", "ci")
    notebook = nbformat.read(path, as_version=4)
    client = NotebookClient(
        notebook,
        timeout=CELL_TIMEOUT_S,
        kernel_name="python3",
        resources={"metadata": {"path": str(tmp_path)}},
    )
    client.execute()  # raises CellExecutionError, naming the cell, if any cell fails
    first = next(cell for cell in notebook.cells if cell.cell_type == "code")
    assert "budget: ci" in "".join(output.get("text", "") for output in first.outputs)
