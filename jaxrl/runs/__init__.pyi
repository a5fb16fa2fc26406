"""Type stub of jaxrl.runs: the names it exports, each from the module that defines it.
The package imports each on first use (lazy_loader reads this file).
"""

from .bookkeeping import TrainResult as TrainResult
from .build import check_config as check_config
from .build import make_agent as make_agent
from .build import make_config as make_config
from .build import make_loop as make_loop
from .checkpoints import CheckpointError as CheckpointError
from .checkpoints import CheckpointStore as CheckpointStore
from .export import export_policy as export_policy
from .metrics import MetricsLogger as MetricsLogger
from .metrics import read_csv as read_csv
from .plots import plot_runs as plot_runs
from .policy import Policy as Policy
from .policy import evaluate_policy as evaluate_policy
from .policy import load as load
from .run_dir import RunDir as RunDir
from .run_dir import RunDirError as RunDirError
from .run_dir import default_run_path as default_run_path
from .runner import LoadedRun as LoadedRun
from .runner import load_run as load_run
from .runner import train_run as train_run
from .tracking import Tracking as Tracking
