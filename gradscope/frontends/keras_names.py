"""Keras names as the user's own program gets them, whatever ran before in the process.

Keras 3 names layers and models from a process-wide counter (``dense``, ``dense_1``, ...), and
a variable's ``path`` carries its layer's name. A target built, or a program run, after another
one in the same process (``gradscope.inspect(...)`` then ``gradscope.run(...)``; a notebook that
calls both) would get ``detector_1/dense_7/kernel`` where the user's code, run alone, gets
``detector/dense/kernel``, and the user's ``--allow-none`` and ``expect`` globs stop matching.
``fresh()`` gives the code it wraps the counters of a fresh process, then puts the caller's
back, so the caller's own later names are what they would have been without gradscope.
"""

from __future__ import annotations

import collections
import contextlib
import sys
from collections.abc import Iterator
from typing import Any

_COUNTERS = "object_name_uids"  # keras.src.utils.naming.uniquify's global attribute


@contextlib.contextmanager
def fresh() -> Iterator[None]:
    """Run the block with Keras' name counters as a new process has them."""
    state = _global_state()
    if state is None:
        yield
        return
    saved = state.get_global_attribute(_COUNTERS)
    state.set_global_attribute(_COUNTERS, collections.defaultdict(int))
    try:
        yield
    finally:
        state.set_global_attribute(_COUNTERS, saved)


def _global_state() -> Any | None:
    """Keras 3's global state module, when Keras is imported (never imported here: code that
    imports Keras inside the block starts with fresh counters anyway)."""
    if "keras" not in sys.modules:
        return None
    try:
        from keras.src.backend.common import global_state
    except ImportError:  # a Keras without it: names are what they are
        return None
    has = hasattr(global_state, "get_global_attribute") and hasattr(
        global_state, "set_global_attribute"
    )
    return global_state if has else None
