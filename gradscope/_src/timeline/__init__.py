"""Gradients over training: record every K steps, find dead, vanishing, exploding, nan, none.

``Recorder`` (:mod:`gradscope._src.timeline.record`) is the front-end-neutral API the Keras
``Monitor`` and ``gradscope run --timeline`` feed; :func:`find` and :class:`Thresholds`
(:mod:`gradscope._src.timeline.findings`) are pure functions over the recorded data. Importing this
package does not import TensorFlow.
"""

from __future__ import annotations

from gradscope._src.timeline.findings import Thresholds, find
from gradscope._src.timeline.record import Recorder, load

__all__ = ["Recorder", "Thresholds", "find", "load"]
