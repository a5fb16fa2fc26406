"""What a run is, as data: run settings and the arrays' layout
(:mod:`jaxrl.config.settings`), the algorithms' tuned presets (:mod:`jaxrl.config.presets`),
and a run's resolved configuration, saved as ``config.json`` (:class:`RunConfig`), with the
files it is read from and written to (:mod:`jaxrl.config.files`)."""

import lazy_loader

# The exported names are declared once, in __init__.pyi (type checkers read it too), and
# imported on first use: `jaxrl plot` and `jaxrl --help` start without JAX.
__getattr__, __dir__, __all__ = lazy_loader.attach_stub(__name__, __file__)
