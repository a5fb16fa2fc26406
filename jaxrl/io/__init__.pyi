"""Type stub of jaxrl.io: the names it exports, each from the module that defines it.
The package imports each on first use (lazy_loader reads this file).
"""

from .bookkeeping import TrainResult as TrainResult
from .checkpoints import CheckpointError as CheckpointError
from .checkpoints import CheckpointStore as CheckpointStore
from .config import RunConfig as RunConfig
from .config import hyperparameters as hyperparameters
from .files import DamagedFile as DamagedFile
from .grid import SweepError as SweepError
from .grid import parse_grid as parse_grid
from .metrics import MetricsLogger as MetricsLogger
from .metrics import read_csv as read_csv
from .plots import plot_runs as plot_runs
from .run_dir import RunDir as RunDir
from .run_dir import RunDirError as RunDirError
from .run_dir import default_run_path as default_run_path
from .runner import LoadedRun as LoadedRun
from .runner import check_config as check_config
from .runner import evaluate_run as evaluate_run
from .runner import load_run as load_run
from .runner import train_run as train_run
from .search_space import TuneError as TuneError
from .search_space import parse_search as parse_search
from .studies import sweep as sweep
from .sweep_report import SweepResult as SweepResult
from .tracking import Tracking as Tracking
from .tuning import tune as tune
from .tuning_report import TuneResult as TuneResult
