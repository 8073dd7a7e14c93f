"""Test-only helpers shared by the engine, GAD and Blockwise tests (``tests/`` is on ``sys.path`` through the
root conftest): :mod:`helpers.drafters` (drafters for property tests), :mod:`helpers.models` (tiny models)."""
