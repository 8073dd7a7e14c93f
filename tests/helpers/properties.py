"""Settings of the property tests: the active hypothesis profile (``full`` or ``fast``, tests/conftest.py) with its
example count scaled per test by what one example costs."""
from hypothesis import settings


def property_settings(weight: float = 1.0, **overrides) -> settings:
    """The active profile with ``weight`` times its examples (at least 3): ``weight = 1`` draws the profile's count
    (60 in ``full``), a cheap property more, a costly one fewer; ``overrides`` are further hypothesis settings."""
    base = settings.default
    return settings(base, max_examples=max(3, round(base.max_examples * weight)), **overrides)
