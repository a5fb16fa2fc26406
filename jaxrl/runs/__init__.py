"""One run and its directory: training a run into it (:func:`train_run`), resuming it,
loading its policy back (:func:`load_run`) and evaluating it, and everything written there
(``config.json``, orbax checkpoints, metrics as CSV and TensorBoard, tracking, progress,
preemption, plots, the end-of-run report, videos)::

    from jaxrl.config import RunConfig
    from jaxrl.runs import load_run, train_run

    result = train_run(RunConfig.from_preset("trpo", "Pendulum-v1"), "runs/pendulum")
    loaded = load_run("runs/pendulum")          # agent, state (seed axis first), metadata
"""

import lazy_loader

# The exported names are declared once, in __init__.pyi (type checkers read it too), and
# imported on first use: `jaxrl plot` and `jaxrl --help` start without JAX.
__getattr__, __dir__, __all__ = lazy_loader.attach_stub(__name__, __file__)
