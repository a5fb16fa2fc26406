"""jaxrl imports gymnax without the modules gymnax needs only for its figures (seaborn,
which pulls in scipy.stats, and pyplot); a figure of gymnax's still gets them. Each check
runs in a fresh interpreter: the test process has imported them already."""

from __future__ import annotations

import subprocess
import sys

import pytest


def _run(code: str) -> str:
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout.strip()


@pytest.mark.parametrize("how", ["make_env('Pendulum-v1')", "resolve_backend('CartPole-v1')"])
def test_jaxrl_imports_gymnax_without_its_rendering_modules(how):
    out = _run(
        "import sys\n"
        "from jaxrl.envs import make_env, resolve_backend\n"
        f"{how}\n"
        "print('gymnax' in sys.modules, 'seaborn' in sys.modules, 'scipy.stats' in sys.modules,"
        " 'matplotlib.pyplot' in sys.modules)"
    )
    assert out == "True False False False"


def test_gymnax_figures_still_get_the_modules_deferred():
    out = _run(
        "import sys\n"
        "from jaxrl.envs import make_env\n"
        "make_env('Pendulum-v1')\n"
        "import gymnax.environments.misc.pong as pong\n"
        "import gymnax.environments.misc.rooms as rooms\n"
        "palette = pong.sns.color_palette('husl', 3)\n"  # what Pong's figure calls
        "import matplotlib.pyplot as plt\n"
        "import seaborn\n"
        "print(len(palette), rooms.plt.subplots is plt.subplots,"
        " type(sys.modules['seaborn']).__name__, seaborn.color_palette is pong.sns.color_palette)"
    )
    assert out == "3 True module True"


def test_a_module_imported_before_is_left_as_it_is():
    out = _run(
        "import sys, seaborn\n"
        "from jaxrl.envs import make_env\n"
        "make_env('Pendulum-v1')\n"
        "import gymnax.environments.misc.pong as pong\n"
        "print(pong.sns is seaborn)"
    )
    assert out == "True"
