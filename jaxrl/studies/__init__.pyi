"""Type stub of jaxrl.studies: the names it exports, each from the module that defines it.
The package imports each on first use (lazy_loader reads this file).
"""

from .grid import SweepError as SweepError
from .grid import parse_grid as parse_grid
from .search_space import TuneError as TuneError
from .search_space import parse_search as parse_search
from .sweep_report import SweepResult as SweepResult
from .sweeps import sweep as sweep
from .tuning import tune as tune
from .tuning_report import TuneResult as TuneResult
