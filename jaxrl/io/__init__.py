"""User-facing input and output: run directories, their configuration, metrics (CSV and
TensorBoard), learning-curve plots, orbax checkpoints and live progress. The ``jaxrl``
command (:mod:`jaxrl.cli`) is built on it; research code can use it directly::

    from jaxrl.io import RunConfig, RunDir, load_run, sweep, train_run

    config = RunConfig.load("runs/trpo-.../config.json")
    loaded = load_run("runs/trpo-...")          # agent, state (seed axis first), metadata
    study = sweep(config, {"max_kl": [0.005, 0.01]}, "sweeps/max-kl")  # jaxrl.io.studies
"""

import lazy_loader

# The exported names are declared once, in __init__.pyi (type checkers read it too), and
# imported on first use: `jaxrl plot` and `jaxrl --help` start without JAX.
__getattr__, __dir__, __all__ = lazy_loader.attach_stub(__name__, __file__)
