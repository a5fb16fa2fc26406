"""One run and its directory: training a run into it (:func:`train_run`), resuming it,
loading its policy back (:func:`jaxrl.load`) and evaluating it (:func:`jaxrl.evaluate_policy`),
and everything written there (``config.json``, orbax checkpoints, metrics as CSV and
TensorBoard, tracking, progress, preemption, plots, the end-of-run report, videos)::

    from jaxrl.runs import RunDir, evaluate_policy, load, make_config, train_run

    result = train_run(make_config("trpo", "Pendulum-v1"), RunDir.create("runs/pendulum"))
    policy = load("runs/pendulum")              # seed 0's policy: policy(obs) -> action
    returns = evaluate_policy(policy, episodes=10)
"""

import lazy_loader

# The exported names are declared once, in __init__.pyi (type checkers read it too), and
# imported on first use: `jaxrl plot` and `jaxrl --help` start without JAX.
__getattr__, __dir__, __all__ = lazy_loader.attach_stub(__name__, __file__)
