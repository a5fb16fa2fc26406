"""Type stub of jaxrl.algorithms: the names it exports, each from the module that defines it.
The package imports each on first use (lazy_loader reads this file).
"""

from ._common import check_bounds as check_bounds
from ._common import document_fields as document_fields
from ._common import hyperparameter as hyperparameter
from .ddpg import DDPG as DDPG
from .ddpg import DDPGState as DDPGState
from .ddpg import GaussianNoise as GaussianNoise
from .ddpg import OUNoise as OUNoise
from .natural_gradient import NaturalGradient as NaturalGradient
from .natural_step import ActorRule as ActorRule
from .natural_step import ActorStep as ActorStep
from .natural_step import StepResult as StepResult
from .npg import NPG as NPG
from .npg import npg_rule as npg_rule
from .on_policy import OnPolicyBatch as OnPolicyBatch
from .on_policy import OnPolicyState as OnPolicyState
from .plugins import load_plugin as load_plugin
from .protocol import ActionSample as ActionSample
from .trpo import TRPO as TRPO
from .trpo import trpo_rule as trpo_rule
