"""What a resumed run may change (``RunConfig.resumed``): the budget and the checkpoint
interval; every other setting given again must match the run's own."""

from __future__ import annotations

import pytest

from jaxrl.config.run_config import ResumeConflict

from .helpers import make_config


def test_a_resume_takes_the_budget_and_keeps_the_rest():
    saved = make_config(hyperparameters={"max_kl": 0.01, "hidden_sizes": [64, 64]})
    resumed = saved.resumed(
        {
            "total_steps": 640,
            "checkpoint_every": 3,
            "max_kl": 0.01,  # the same value: fine
            "hidden_sizes": (64, 64),  # a tuple on the command line, a list in config.json
            "backend": "auto",  # matches any backend
            "resume": "runs/x",  # not a setting of the run
        }
    )
    assert (resumed.total_steps, resumed.checkpoint_every) == (640, 3)
    assert resumed.hyperparameters == saved.hyperparameters and resumed.env == saved.env


@pytest.mark.parametrize(
    ("given", "name"),
    [({"max_kl": 0.02}, "max_kl"), ({"env": "CartPole-v1"}, "env"), ({"num_envs": 8}, "num_envs")],
)
def test_a_resume_refuses_other_changes(given, name):
    saved = make_config(hyperparameters={"max_kl": 0.01})
    with pytest.raises(ResumeConflict, match="differs from the resumed run's") as error:
        saved.resumed(given)
    assert error.value.name == name and error.value.given == given[name]
