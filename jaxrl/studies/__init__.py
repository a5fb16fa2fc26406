"""Many runs: sweeps over a grid of settings x seeds (:func:`sweep`), Optuna tuning
(:func:`tune`), their reports, and the analysis of runs side by side (compare, rliable
statistics, normalized scores)::

    from jaxrl.config import RunConfig
    from jaxrl.studies import sweep

    base = RunConfig.from_preset("trpo", "Pendulum-v1")
    study = sweep(base, {"max_kl": [0.005, 0.01]}, "sweeps/max-kl")
"""

import lazy_loader

# The exported names are declared once, in __init__.pyi (type checkers read it too), and
# imported on first use: `jaxrl plot` and `jaxrl --help` start without JAX.
__getattr__, __dir__, __all__ = lazy_loader.attach_stub(__name__, __file__)
