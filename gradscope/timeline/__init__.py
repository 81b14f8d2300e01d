"""Gradients over training: record every K steps, find dead, vanishing, exploding, nan, none.

``Recorder`` (:mod:`gradscope.timeline.record`) is the front-end-neutral API the Keras
``Monitor`` and ``gradscope run --timeline`` feed; :func:`find` and :class:`Thresholds`
(:mod:`gradscope.timeline.findings`) are pure functions over the recorded data. Importing this
package does not import TensorFlow.
"""

from __future__ import annotations

from gradscope.timeline.findings import Thresholds, find
from gradscope.timeline.record import Recorder, load

__all__ = ["Recorder", "Thresholds", "find", "load"]
