"""Test-session settings shared by every test file (and the subprocesses tests start)."""

from __future__ import annotations

import os

# Tests spend most of their time in XLA's CPU compiler; skipping LLVM's most expensive passes
# made compile-bound tests ~13% faster here and did not slow the learning runs. Set before any
# test imports jax (XLA reads the flags once, when its backend starts); subprocesses inherit it.
_FLAG = "--xla_llvm_disable_expensive_passes=true"
if _FLAG not in os.environ.get("XLA_FLAGS", ""):
    os.environ["XLA_FLAGS"] = f"{os.environ.get('XLA_FLAGS', '')} {_FLAG}".strip()
