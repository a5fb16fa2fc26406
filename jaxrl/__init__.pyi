"""Type stub of jaxrl: the names it exports, each from the module that defines it.
The package imports each on first use (lazy_loader reads this file).
"""

from . import core as core
from . import replay as replay
from .algorithms import DDPG as DDPG
from .algorithms import NPG as NPG
from .algorithms import TRPO as TRPO
from .algorithms import ActionSample as ActionSample
from .algorithms import DDPGState as DDPGState
from .algorithms import GaussianNoise as GaussianNoise
from .algorithms import OnPolicyBatch as OnPolicyBatch
from .algorithms import OnPolicyState as OnPolicyState
from .algorithms import OUNoise as OUNoise
from .algorithms import load_plugin as load_plugin
from .replay import NStepBatch as NStepBatch
from .replay import ReplayBuffer as ReplayBuffer
from .replay import Transition as Transition
from .rollout import Rollout as Rollout
from .runs import Policy as Policy
from .runs import evaluate_policy as evaluate_policy
from .runs import export_policy as export_policy
from .runs import load as load
from .runs import make_agent as make_agent
from .runs import make_config as make_config

__version__: str
