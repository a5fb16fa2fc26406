"""jaxrl: functional JAX implementations of Tianshou's NPG, TRPO and DDPG."""

import lazy_loader

# The exported names are declared once, in __init__.pyi (type checkers read it too), and
# imported on first use: `jaxrl plot` and `jaxrl --help` start without JAX.
__getattr__, _, __all__ = lazy_loader.attach_stub(__name__, __file__)

__version__ = "0.1.0"
__all__ = [*__all__, "__version__"]


def __dir__() -> list[str]:
    return list(__all__)
