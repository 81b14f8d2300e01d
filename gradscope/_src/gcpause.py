"""Python's cycle collector paused while gradscope makes many objects that live on."""

from __future__ import annotations

import contextlib
import gc
from collections.abc import Iterator


@contextlib.contextmanager
def paused() -> Iterator[None]:
    """Pause the cyclic garbage collector for the block; reference counting still frees.

    Reading a spec and tracing its graph allocate hundreds of thousands of objects that stay
    alive until the report is written, and every few hundred allocations the collector walks
    them again, and after the import, TensorFlow's whole heap too: 1.5 s of 20 s on a
    10,000-node spec (bench/RESULTS.md). The cycles these phases leave behind are few; the
    collector resumes, as it was, when the block ends.
    """
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()
