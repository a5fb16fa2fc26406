"""Type stub of jaxrl.config: the names it exports, each from the module that defines it.
The package imports each on first use (lazy_loader reads this file).
"""

from .files import DamagedFile as DamagedFile
from .run_config import RunConfig as RunConfig
from .spellings import hyperparameters as hyperparameters
