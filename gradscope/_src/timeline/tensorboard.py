"""TensorBoard event files of a timeline: scalars and histograms under tags named by variable.

Tags, per recorded step, prefixed with ``<site>/`` (the record's ``FILE:LINE``) with
``sites=True`` (``gradscope run``: every tag, so each series keeps its tag over the run);
otherwise only the tags of a site other than the first one written are (the Monitor's
single ``fit`` line has none):

- ``gradients/norm/<variable>``: the gradient's L2 norm;
- ``gradients/ratio/<variable>``: gradient norm / the variable's own norm;
- ``gradients/zero_fraction/<variable>``: share of exactly-zero elements;
- ``weights/norm/<variable>``: the variable's own norm;
- ``gradients/<variable>``: a histogram of the gradient (with ``histograms=True``);
- ``loss`` and, with several losses, ``losses/<loss>/norm/<variable>`` and
  ``cosine/<a>~<b>/<variable>``.

Written as one ``Summary`` event per record (``tf.summary.experimental.write_raw_pb``), its
values carrying the summary metadata of TensorBoard's ``scalars`` and ``histograms`` plugins
(histograms as ``[left edge, right edge, count]`` rows), so no ``tensorboard`` package is
needed to write them (``tf.summary.scalar`` needs it). TensorFlow is imported when the first
record comes. Read by TensorBoard's own loader or ``tf.compat.v1.train.summary_iterator``.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from typing import Any

import numpy as np

from gradscope._src.timeline.arrays import dense


class Board:
    """A ``tf.summary`` file writer for timeline records."""

    def __init__(self, directory: str, *, histograms: bool = True, sites: bool = False) -> None:
        self.directory = directory
        self.histograms = histograms
        self.sites = sites
        self._writer: Any = None
        self._first: str | None = None  # the first site written: unprefixed unless ``sites``

    def _tf(self) -> Any:
        import tensorflow as tf

        if self._writer is None:
            with tf.init_scope():  # the writer is eager state, even when a record comes in a trace
                eager = tf.executing_eagerly()
                if eager:
                    self._writer = tf.summary.create_file_writer(self.directory)
            if not eager:  # TensorFlow 1 behaviour (disable_v2_behavior): events written directly
                self._writer = tf.compat.v1.summary.FileWriter(self.directory)
        return tf

    def write(self, record: Mapping[str, Any], gradients: Mapping[str, Any]) -> None:
        """Write one step record; ``gradients`` (name -> gradient or None) feed histograms."""
        tf = self._tf()
        site = str(record["site"])
        self._first = site if self._first is None else self._first
        prefix = f"{site}/" if self.sites or site != self._first else ""
        step = int(record["step"])
        scalars: dict[str, float | None] = {f"{prefix}loss": record.get("loss")}
        for name, v in record["variables"].items():
            ratio = (
                v["norm"] / v["weight_norm"]
                if v["norm"] is not None and v.get("weight_norm")
                else None
            )
            scalars.update(
                {
                    f"{prefix}gradients/norm/{name}": v["norm"],
                    f"{prefix}gradients/ratio/{name}": ratio,
                    f"{prefix}gradients/zero_fraction/{name}": v["zero_fraction"],
                    f"{prefix}weights/norm/{name}": v.get("weight_norm"),
                }
            )
        for loss, per in record.get("losses", {}).items():
            for name, v in per["variables"].items():
                scalars[f"{prefix}losses/{loss}/norm/{name}"] = v["norm"]
        for pair in record.get("cosine", []):
            a, b = pair["losses"]
            for name, c in pair["variables"].items():
                scalars[f"{prefix}cosine/{a}~{b}/{name}"] = c
        values = [(tag, np.float32(v), "scalars") for tag, v in scalars.items() if v is not None]
        for name, g in gradients.items() if self.histograms else ():
            array = _elements(g)
            if array is not None and array.size and np.all(np.isfinite(array)):
                values.append((f"{prefix}gradients/{name}", buckets(array), "histograms"))
        self._emit(tf, step, values)

    def _emit(self, tf: Any, step: int, values: list[tuple[str, Any, str]]) -> None:
        """Write ``(tag, value, plugin)`` at ``step`` as one ``Summary`` event: through the
        ``tf.summary`` writer (one op for the record: a ``tf.summary.write`` per tag was an
        eager op each, ~40 a record, most of a monitored fit's cost with TensorBoard), or
        directly when TensorFlow runs with its version 1 behaviour (no eager)."""
        summary = tf.compat.v1.Summary()
        for tag, value, plugin in values:
            summary.value.add(tag=tag, metadata=_meta(tf, plugin),
                              tensor=tf.make_tensor_proto(value))  # fmt: skip
        if isinstance(self._writer, tf.compat.v1.summary.FileWriter):
            self._writer.add_summary(summary, step)
        else:
            with self._writer.as_default(step=step):
                tf.summary.experimental.write_raw_pb(summary.SerializeToString(), step=step)
        self._writer.flush()

    def close(self) -> None:
        if self._writer is not None:
            self._writer.close()
            self._writer = None  # a later record opens a new event file in the directory


@functools.cache
def _meta(tf: Any, plugin: str) -> Any:
    meta = tf.compat.v1.SummaryMetadata()
    meta.plugin_data.plugin_name = plugin  # content left empty: the plugins' version 0
    return meta


def _elements(gradient: Any) -> np.ndarray[Any, Any] | None:
    """A gradient's elements as a dense array: a tensor's, or those a ``Summary`` kept
    (None: no gradient, or a ``Summary`` of its norm alone)."""
    if gradient is None:
        return None
    if hasattr(gradient, "square_sum"):  # a Summary
        kept = getattr(gradient, "values", None)
        return None if kept is None else np.asarray(kept)
    return dense(gradient)


def buckets(array: np.ndarray[Any, Any], count: int = 30) -> np.ndarray[Any, Any]:
    """A histogram as TensorBoard stores it: rows of ``[left edge, right edge, count]``."""
    values = array.astype(np.float64).ravel()
    low, high = float(values.min()), float(values.max())
    if low == high:
        return np.array([[low, high, float(values.size)]])
    counts, edges = np.histogram(values, bins=count, range=(low, high))
    return np.stack([edges[:-1], edges[1:], counts.astype(np.float64)], axis=1)
