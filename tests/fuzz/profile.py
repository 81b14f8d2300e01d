"""How hard the fuzz suite works: a short run in ``make test``, a long one in ``make fuzz``.

``GRADSCOPE_FUZZ=long`` (what ``make fuzz`` sets) multiplies every example count by
``GRADSCOPE_FUZZ_SCALE`` (default 50) and draws new examples each run; the short run is
derandomized, so ``make test`` sees the same examples every time.
"""

from __future__ import annotations

import os
from datetime import timedelta

from hypothesis import HealthCheck, settings

LONG = os.environ.get("GRADSCOPE_FUZZ") == "long"
SCALE = int(os.environ.get("GRADSCOPE_FUZZ_SCALE", "50")) if LONG else 1


def fuzz_settings(examples: int, seconds: float) -> settings:
    """Settings for one fuzz test: ``examples`` in the short run, each within ``seconds``.

    The per-example deadline is the time bound every input must meet (hypothesis fails an
    example that exceeds it twice in a row).
    """
    return settings(
        max_examples=examples * SCALE,
        deadline=timedelta(seconds=seconds),
        derandomize=not LONG,
        database=None,
        suppress_health_check=[
            HealthCheck.too_slow,
            HealthCheck.data_too_large,
            HealthCheck.filter_too_much,
            HealthCheck.large_base_example,
        ],
        print_blob=True,
    )
