"""Sphinx configuration of jaxrl's documentation site.

Build: ``pip install -e ".[docs]" && sphinx-build -W --keep-going -n docs docs/_build``.
Pages are Markdown (MyST); notebooks are rendered with the outputs they are stored with
(``tests/test_notebooks.py`` executes them); the API reference is autosummary over the
names each public package exports.
"""

from __future__ import annotations

import jaxrl

project = "jaxrl"
author = "the jaxrl developers"
copyright = "the jaxrl developers"
release = jaxrl.__version__

extensions = [
    "myst_nb",
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "sphinx.ext.napoleon",
    "sphinx.ext.mathjax",
    "sphinx.ext.viewcode",
]
# autosummary writes its stub pages in the first suffix's format: reStructuredText.
source_suffix = {".rst": "restructuredtext", ".md": "myst-nb", ".ipynb": "myst-nb"}
exclude_patterns = ["_build", "_templates", "jupyter_execute", "**.ipynb_checkpoints"]
myst_enable_extensions = ["dollarmath", "colon_fence"]
myst_heading_anchors = 3
nb_execution_mode = "off"  # notebooks show their stored outputs

autosummary_generate = True
templates_path = ["_templates"]  # classes and modules without member tables
autodoc_typehints = "description"
autodoc_member_order = "bysource"
autodoc_default_options = {"members": True, "show-inheritance": True}
napoleon_google_docstring = True
napoleon_numpy_docstring = False
napoleon_use_ivar = True  # "Attributes:" as fields: autodoc documents the attributes once
# The field lists jaxrl.algorithms.document_fields appends to an algorithm's docstring.
napoleon_custom_sections = [
    ("Learning leaves", "params_style"),
    ("Static structure", "params_style"),
]

# Every cross-reference to jaxrl's own names must resolve (-n). Names of other libraries
# resolve only through their inventories, which a build without network cannot fetch: those
# are not checked.
nitpicky = True
# A public name (jaxrl.runs.RunDir) and its defining module's (jaxrl.runs.run_dir.RunDir) are one
# object documented at two paths: a short reference to it is ambiguous, never broken.
suppress_warnings = ["ref.python"]
nitpick_ignore_regex = [
    (
        r"py:.*",
        r"(jax|jaxlib|flax|optax|distrax|chex|numpy|np|gymnasium|gymnax|brax|envpool)"
        r"(\..*)?",
    ),
    (r"py:.*", r"(orbax|optuna|matplotlib|tensorboardX|tyro|rich|imageio|torch)(\..*)?"),
    (r"py:.*", r"(collections|typing|dataclasses|pathlib|os|enum|types|abc)(\..*)?"),
    (r"py:class", r"(Array|PyTree|Any|Callable|Sequence|Mapping|Iterator|Path|Literal)"),
    # jaxrl.training.TrainConfig is RunSettings under the jitted driver's name; signatures
    # that spell it so cannot point at the alias.
    (r"py:class", r"TrainConfig"),
    # Private modules' names (jaxrl.algorithms._common...) appear in signatures' types.
    (r"py:.*", r"jaxrl(\.\w+)*\._\w+(\.\w+)*"),
]

html_theme = "furo"
html_title = f"jaxrl {release}"


def _collapsed_navigation(app, pagename, templatename, context, doctree):
    """Furo draws each page's sidebar from the whole toctree, every API page included; with
    about 190 API pages that was half of the site's build time (each page resolves the whole
    tree). The sidebar expands the current page's branch instead (Sphinx's ``collapse``)."""
    toctree = context.get("toctree")
    if toctree is not None:
        context["toctree"] = lambda **options: toctree(**{**options, "collapse": True})


def setup(app):
    app.connect("html-page-context", _collapsed_navigation, priority=400)  # before furo's
