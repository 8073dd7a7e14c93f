"""Shim for ``scripts/verify_cost.py`` (remove once it imports :mod:`fastdec.engine.profile`); test helpers live in
``tests/helpers``."""
from .profile import build_random_transformer  # noqa: F401
