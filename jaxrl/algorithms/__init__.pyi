"""Type stub of jaxrl.algorithms: the names it exports, each from the module that defines it.
The package imports each on first use (lazy_loader reads this file).
"""

from ._common import check_field as check_field
from ._common import check_int_field as check_int_field
from ._common import document_fields as document_fields
from ._common import hyperparameter as hyperparameter
from ._types import ActionSample as ActionSample
from .ddpg import DDPG as DDPG
from .ddpg import DDPGState as DDPGState
from .ddpg import GaussianNoise as GaussianNoise
from .ddpg import OUNoise as OUNoise
from .natural_gradient import NaturalGradient as NaturalGradient
from .natural_gradient import OnPolicyBatch as OnPolicyBatch
from .natural_gradient import OnPolicyState as OnPolicyState
from .npg import NPG as NPG
from .plugins import load_plugin as load_plugin
from .trpo import TRPO as TRPO
