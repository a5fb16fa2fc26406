"""One home for a run's settings: :class:`jaxrl.config.settings.RunSettings` declares them
(nothing else in jaxrl/ declares a field of the same name, but for the objects listed below,
which are not settings of a run), validates them by one rule, and the command line builds its
options from the fields' metadata, so a new setting is one field declaration."""

from __future__ import annotations

import ast
import dataclasses
import json
from pathlib import Path

import pytest

import jaxrl
from jaxrl.cli.parsing import _run_fields
from jaxrl.config.run_config import RunConfig
from jaxrl.config.settings import RunSettings, SettingError, setting, settings_fields
from jaxrl.config.spellings import command_line_options
from jaxrl.training import TrainConfig

PACKAGE = Path(jaxrl.__file__).parent

# Fields that share a run setting's name on objects that are not a run's settings.
NOT_RUN_SETTINGS = {
    # the vector environment's own size
    ("envs/host.py", "HostVectorEnv", "num_envs"),
    # the shape of the rollouts a research collector returns (make_collector's arguments)
    ("training/collect.py", "JaxCollector", "num_envs"),
    ("training/collect.py", "JaxCollector", "num_steps"),
    # the seed of `jaxrl evaluate`'s episodes (a command option, not a run's)
    ("cli/options.py", "EvaluateCommand", "seed"),
    # which of a run's seeds a loaded policy is (an index into the run's seeds)
    ("runs/policy.py", "Policy", "seed"),
}


def _declarations(names: set[str]) -> set[tuple[str, str, str]]:
    """``(file, class, field)`` of every annotated class attribute named in ``names``."""
    found = set()
    for path in sorted(PACKAGE.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if not isinstance(node, ast.ClassDef):
                continue
            for statement in node.body:
                target = getattr(statement, "target", None)
                if isinstance(statement, ast.AnnAssign) and isinstance(target, ast.Name):
                    if target.id in names:
                        relative = path.relative_to(PACKAGE).as_posix()
                        found.add((relative, node.name, target.id))
    return found


def test_each_run_setting_is_declared_in_exactly_one_class():
    names = {f.name for f in settings_fields()}
    assert {"total_steps", "num_envs", "num_steps", "eval_every", "seed"} <= names
    declared = _declarations(names)
    home = {("config/settings.py", "RunSettings", name) for name in names}
    assert declared - NOT_RUN_SETTINGS == home
    # RunConfig (the run directory's configuration) and TrainConfig (the drivers') are it.
    assert TrainConfig is RunSettings and issubclass(RunConfig, RunSettings)


def test_one_rule_validates_every_setting_and_names_it():
    cases = {
        "num_envs": (0, "a positive integer"),
        "eval_every": (-3, "a positive integer"),
        "checkpoint_every": (-1, "an integer >= 0"),
        "seed": (1.5, "an integer"),
        "normalize_obs": ("yes", "True or False"),
        "env_backend": ("pool", "one of 'auto', 'gymnasium', 'envpool'"),
        "brax_backend": ("fast", "one of 'generalized', 'positional', 'spring', 'mjx' or None"),
    }
    for name, (value, expected) in cases.items():
        with pytest.raises(SettingError) as caught:
            RunSettings(**{name: value})
        assert caught.value.field == name
        assert str(caught.value) == f"RunSettings.{name} must be {expected}, got {value!r}"
    with pytest.raises(SettingError, match=r"^RunSettings\.total_steps must be at least one"):
        RunSettings(num_envs=4, num_steps=8, total_steps=31)
    # The same rule, spelled with the command line's flags.
    with pytest.raises(SettingError) as caught:
        RunSettings(num_envs=4, num_steps=8, total_steps=31)
    assert caught.value.describe(lambda n: "--" + n.replace("_", "-")) == (
        "--total-steps must be at least one collection (--num-envs x --num-steps = 4 x 8 = 32 "
        "env steps), got 31"
    )


def test_a_new_setting_is_one_field_declaration():
    """A setting declared on a subclass reaches the command line's options with its type,
    default and help, and is validated by the one rule; nothing else names it."""

    @dataclasses.dataclass(frozen=True, kw_only=True)
    class Extended(RunConfig):
        rollouts_per_log: int = setting(3, "collections between log lines", minimum=1)

    defaults = jaxrl.config.run_config.run_defaults("trpo", "pendulum")
    extended = command_line_options(Extended, defaults, "pendulum")
    options = {name: rest for name, *rest in extended}
    assert options["rollouts_per_log"] == [int, 3, "collections between log lines"]
    run = {"algo": "trpo", "env": "Pendulum-v1", "backend": "jax"}
    assert Extended(**run).rollouts_per_log == 3
    with pytest.raises(SettingError, match=r"^Extended\.rollouts_per_log must be a positive"):
        Extended(**run, rollouts_per_log=0)
    with pytest.raises(SettingError, match=r"^Extended\.backend must be one of 'jax'"):
        Extended(**{**run, "backend": "auto"})
    # The command's run options are exactly the metadata's (with the preset's defaults).
    defaults = jaxrl.config.run_config.run_defaults("trpo", "mujoco")
    from_metadata = command_line_options(RunConfig, defaults, "mujoco")
    assert _run_fields("trpo", "mujoco")[: len(from_metadata)] == from_metadata
    assert {name for name, *_ in from_metadata} == {
        f.name for f in dataclasses.fields(RunConfig) if f.metadata.get("cli")
    }


def test_config_json_of_an_older_run_still_loads(tmp_path):
    """A ``config.json`` written before ``check_finite`` and ``counts`` existed (the format
    of earlier versions) loads, the missing setting at its default."""
    old = {
        "algo": "trpo",
        "env": "Pendulum-v1",
        "backend": "jax",
        "preset": "pendulum",
        "run": {
            "num_envs": 4,
            "num_steps": 8,
            "total_steps": 320,
            "eval_every": 64,
            "eval_episodes": 1,
            "seed": 0,
            "num_seeds": 2,
            "checkpoint_every": 1,
            "normalize_obs": False,
            "env_backend": "auto",
            "checkpoint_buffer": True,
            "brax_backend": None,
        },
        "hyperparameters": {"hidden_sizes": [8], "repeat": 1},
    }
    path = tmp_path / "config.json"
    path.write_text(json.dumps(old))
    config = RunConfig.load(path)
    assert config.check_finite is False and config.num_seeds == 2
    assert config.layout.num_collections == 10
    assert config.make_agent().hidden_sizes == (8,)
