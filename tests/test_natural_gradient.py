"""NPG and TRPO are siblings over one natural-gradient learner: each has only its own
fields; TRPO takes Tianshou's ``trust_region_size`` for parity, ignores it and says so; every
field carries its help (the docstring's field list and the command line's help)."""

from __future__ import annotations

import dataclasses
import warnings

import pytest

import jaxrl
from jaxrl.algorithms import NaturalGradient, registry
from jaxrl.algorithms._common import field_help
from jaxrl.io.config import hyperparameters


def names(cls):
    return {f.name for f in dataclasses.fields(cls)}


def test_npg_and_trpo_add_only_their_own_fields():
    shared = names(NaturalGradient)
    assert names(jaxrl.NPG) - shared == {"trust_region_size", "normalize_step"}
    assert names(jaxrl.TRPO) - shared == {"max_kl", "backtrack_coeff", "max_backtracks"}
    assert not issubclass(jaxrl.TRPO, jaxrl.NPG)
    with pytest.raises(NotImplementedError, match="NaturalGradient has no actor rule"):
        NaturalGradient().actor_rule()


def test_trpo_takes_and_ignores_the_npg_step_size_with_a_warning():
    with pytest.warns(UserWarning, match="TRPO ignores trust_region_size: TRPO's step is set"):
        agent = jaxrl.TRPO(actor_step_size=0.3, max_kl=0.02)
    assert agent == jaxrl.TRPO(max_kl=0.02)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        jaxrl.TRPO(max_kl=0.02)  # nothing to say


@pytest.mark.parametrize("algo", ["npg", "trpo", "ddpg"])
def test_every_field_has_help_and_the_docstring_lists_it(algo):
    cls = registry.get(algo).cls
    for field in dataclasses.fields(cls):
        help_text = field_help(field)
        assert help_text, f"{cls.__name__}.{field.name} has no help"
        assert f"      {field.name}: " in cls.__doc__
    on_the_command_line = {spec.name: spec.help for spec in hyperparameters(algo)}
    assert set(on_the_command_line) == names(cls) - {"actor_network", "critic_network"}
    assert on_the_command_line["gamma"] == "discount factor in [0, 1]"
