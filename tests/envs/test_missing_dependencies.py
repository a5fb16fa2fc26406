"""An environment whose library is not installed is one error naming jaxrl's extra to
install, not the environment library's own."""

from __future__ import annotations

import sys

import pytest

from jaxrl.envs import make_host_env


# Cost: about 0.1 s (gymnasium's MuJoCo module is imported again, without MuJoCo).
def test_a_mujoco_task_without_mujoco_names_the_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "mujoco", None)  # as if MuJoCo were not installed
    # gymnasium's MuJoCo package too: a test before this one may have imported it
    package = "gymnasium.envs.mujoco"
    for name in [m for m in sys.modules if m == package or m.startswith(package + ".")]:
        monkeypatch.delitem(sys.modules, name)
    with pytest.raises(ValueError) as error:
        make_host_env("Hopper-v5", 1, 0, "gymnasium")
    assert str(error.value) == "env: Hopper-v5 needs MuJoCo: pip install 'jaxrl[mujoco]'"
