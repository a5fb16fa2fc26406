"""Algorithms composed from :mod:`jaxrl.core`, one module each; the off-policy ones from
:mod:`jaxrl.algorithms.off_policy`. The field and check helpers below are for writing new
algorithms (``examples/td3.py``)."""

import lazy_loader

# The exported names are declared once, in __init__.pyi (type checkers read it too), and
# imported on first use: `jaxrl plot` and `jaxrl --help` start without JAX.
__getattr__, __dir__, __all__ = lazy_loader.attach_stub(__name__, __file__)
