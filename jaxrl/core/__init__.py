"""The pure functional core of jaxrl.

Small, jittable and vmappable functions with no knowledge of environments or training
loops; the algorithms in :mod:`jaxrl` are composed from them.
"""

from jaxrl.core.actions import bound_action, map_action, scale_action, unscale_action
from jaxrl.core.distributions import (
    CategoricalParams,
    DistributionParams,
    GaussianParams,
    entropy,
    kl_divergence,
    log_prob,
    mode,
    sample,
)
from jaxrl.core.normalization import RunningMeanStd, normalize_observations
from jaxrl.core.polyak import soft_update
from jaxrl.core.prng import BUCKETED_THREEFRY, bucketed_keys
from jaxrl.core.returns import GAEResult, gae, nstep_targets
from jaxrl.core.stats import SummaryStats
from jaxrl.core.tree import apply_if
from jaxrl.core.trust_region import (
    ConjugateGradientResult,
    LineSearchResult,
    backtracking_line_search,
    conjugate_gradient,
    fisher_vector_product,
    make_fisher_vector_product,
    make_gauss_newton_vector_product,
)

__all__ = [
    "BUCKETED_THREEFRY",
    "CategoricalParams",
    "ConjugateGradientResult",
    "DistributionParams",
    "GAEResult",
    "GaussianParams",
    "LineSearchResult",
    "RunningMeanStd",
    "SummaryStats",
    "apply_if",
    "backtracking_line_search",
    "bucketed_keys",
    "bound_action",
    "conjugate_gradient",
    "entropy",
    "fisher_vector_product",
    "gae",
    "kl_divergence",
    "log_prob",
    "make_fisher_vector_product",
    "make_gauss_newton_vector_product",
    "map_action",
    "mode",
    "normalize_observations",
    "nstep_targets",
    "sample",
    "scale_action",
    "soft_update",
    "unscale_action",
]
