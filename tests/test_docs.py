"""The documentation site: it builds with every warning an error and every cross-reference
resolved, and its API reference documents every name a public package exports."""

from __future__ import annotations

import importlib
import re
import subprocess
import sys
import types
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
PUBLIC_PACKAGES = (
    "jaxrl",
    "jaxrl.algorithms",
    "jaxrl.core",
    "jaxrl.envs",
    "jaxrl.training",
    "jaxrl.config",
    "jaxrl.runs",
    "jaxrl.studies",
)
_EVAL_RST = re.compile(r"^```\{eval-rst\}\n(.*?)^```$", re.DOTALL | re.MULTILINE)


def documented_names() -> set[str]:
    """Full names of every entry of the API pages' autosummary tables (each table's names
    are relative to the ``currentmodule`` in force where it stands)."""
    names: set[str] = set()
    for page in sorted((DOCS / "api").glob("*.md")):
        for block in _EVAL_RST.findall(page.read_text()):
            module, in_table = "", False
            for line in block.splitlines():
                stripped = line.strip()
                if stripped.startswith(".. module::"):  # a package's page
                    names.add(stripped.split("::", 1)[1].strip())
                elif stripped.startswith(".. currentmodule::"):
                    module = stripped.split("::", 1)[1].strip()
                elif stripped.startswith(".. autosummary::"):
                    in_table = True
                elif in_table and stripped and not stripped.startswith(":"):
                    names.add(f"{module}.{stripped}" if module else stripped)
    return names


def test_every_exported_name_is_in_the_api_reference():
    documented = documented_names()
    top = importlib.import_module("jaxrl")
    missing = []
    for package_name in PUBLIC_PACKAGES:
        package = importlib.import_module(package_name)
        for name in package.__all__:
            if name.startswith("__"):
                continue
            value = getattr(package, name)
            full = f"{package_name}.{name}"
            if isinstance(value, types.ModuleType):
                full = value.__name__
            # A name exported at the top as well is documented once, as jaxrl.NAME.
            at_top = getattr(top, name, None) is value and f"jaxrl.{name}" in documented
            if full not in documented and not at_top:
                missing.append(full)
    assert not missing, f"missing from docs/api/*.md: {missing}"


def test_the_reference_check_sees_the_tables():
    documented = documented_names()
    assert {"jaxrl.TRPO", "jaxrl.core.gae", "jaxrl.algorithms.trpo_rule"} <= documented
    assert "jaxrl.core.not_a_name" not in documented


# A name in backticks (Markdown's, or reST's ``name`` and :role:`~name`): `jaxrl.x.y` (a
# module, or an attribute of one) or `jaxrl/x/y.py`.
_NAMED = re.compile(r"`~?(jaxrl(?:\.\w+)+|jaxrl/[\w/]+\.py)")
# The pages, and the docstrings and comments of the package, benchmarks and examples (the
# changelog, a history, may name what was removed; tests name made-up modules).
_TEXTS = ("README.md", "TESTING.md", "docs/**/*.md", "jaxrl/**/*.py", "benchmarks/**/*.py")
_TEXTS += ("examples/**/*.py",)


def named_in(text: str) -> set[str]:
    """The jaxrl names and paths ``text`` writes in backticks (a call's name without it)."""
    return set(_NAMED.findall(text))


def resolves(name: str) -> bool:
    """Whether ``name`` (``jaxrl.a.b``) is a module or an attribute reached from one, or a
    path (``jaxrl/a.py``) a file of this checkout."""
    if name.endswith(".py"):
        return (ROOT / name).is_file()
    parts = name.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            value = importlib.import_module(".".join(parts[:cut]))
        except ImportError:
            continue
        for attribute in parts[cut:]:
            if not hasattr(value, attribute):
                return False
            value = getattr(value, attribute)
        return True
    return False


def test_the_docs_name_only_what_exists():
    """Every ``jaxrl.…`` name and ``jaxrl/…`` path that the pages and docstrings write in
    backticks exists: a moved or renamed piece leaves no stale pointer to it."""
    texts = {path for pattern in _TEXTS for path in ROOT.glob(pattern)}
    stale = sorted(
        f"{text.relative_to(ROOT)}: {name}"
        for text in texts
        if not {"generated", ".venv-rejax", ".venv-sbx"} & set(text.parts)
        for name in named_in(text.read_text())
        if not resolves(name)
    )
    assert not stale, stale


def test_the_names_check_tells_a_stale_name():
    text = "`jaxrl.core.gae`, `jaxrl.runs.no_such_module`, `jaxrl.TRPO(gamma=0.9)`"
    text += ", `jaxrl/runs/x.py`"
    text += ", :func:`~jaxrl.core.returns.gae`"
    assert named_in(text) == {
        "jaxrl.core.gae",
        "jaxrl.core.returns.gae",
        "jaxrl.runs.no_such_module",
        "jaxrl.TRPO",
        "jaxrl/runs/x.py",
    }
    assert resolves("jaxrl.core.gae") and resolves("jaxrl.TRPO")
    assert resolves("jaxrl/runs/runner.py")
    assert not resolves("jaxrl.runs.no_such_module") and not resolves("jaxrl.core.no_such_name")
    assert not resolves("jaxrl/runs/x.py")


@pytest.mark.slow
def test_the_site_builds_without_a_warning(tmp_path):
    """``sphinx-build -W --keep-going -n``: warnings are errors, every cross-reference to
    jaxrl's names resolves (docs/conf.py's nitpicky mode)."""
    pytest.importorskip("sphinx")
    pytest.importorskip("myst_nb")
    # In place: pages include ../CHANGELOG.md and ../TESTING.md and link ../notebooks;
    # autosummary writes its stubs to docs/api/generated/ (git-ignored).
    command = [sys.executable, "-m", "sphinx", "-W", "--keep-going", "-n", "-q", "-b", "html"]
    command += ["-d", str(tmp_path / "doctrees"), str(DOCS), str(tmp_path / "html")]
    result = subprocess.run(command, capture_output=True, text=True, timeout=900, check=False)
    assert result.returncode == 0, result.stderr[-6000:]
    assert (tmp_path / "html" / "api" / "generated" / "jaxrl.TRPO.html").exists()
    # A class's page documents what it inherits from jaxrl's own classes (NPG's init and
    # update are NaturalGradient's).
    npg = (tmp_path / "html" / "api" / "generated" / "jaxrl.NPG.html").read_text()
    assert 'id="jaxrl.NPG.init"' in npg and 'id="jaxrl.NPG.update"' in npg
    # A page's sidebar expands its own branch (docs/conf.py): the home page lists no API
    # page, an API page its section's.
    assert 'href="api/generated/' not in (tmp_path / "html" / "index.html").read_text()
    assert 'href="jaxrl.TRPO.html"' in npg


def test_no_build_output_is_committed():
    """What building the site writes (the executed notebooks, autosummary's stubs, the
    HTML) is git-ignored and not in the repository."""
    listed = subprocess.run(
        ["git", "ls-files", "docs/jupyter_execute", "docs/_build", "docs/api/generated"],
        cwd=ROOT, capture_output=True, text=True, check=False,
    )  # fmt: skip
    if listed.returncode != 0:
        pytest.skip("not a git checkout")
    assert listed.stdout == ""
    ignored = subprocess.run(
        ["git", "check-ignore", "-q", "docs/jupyter_execute/x.png"], cwd=ROOT, check=False
    )
    assert ignored.returncode == 0  # git-ignored
