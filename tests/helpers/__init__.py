"""Test-only helpers shared by the engine, GAD and Blockwise tests (``tests/`` is on ``sys.path`` through the
root conftest): :mod:`helpers.drafters` (drafters for property tests), :mod:`helpers.models` (tiny models),
:mod:`helpers.blockwise` (blockwise decoding of one sentence), :mod:`helpers.import_graph` (the package's imports)."""
