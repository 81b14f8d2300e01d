"""The timeline recorder: gradients every K steps in, timeline JSON (contract section 7) out.

Front-end neutral: the Keras :class:`~gradscope.keras.Monitor` and ``gradscope run --every K
--timeline FILE`` both feed it. Values are read with numpy (``np.asarray``), so it takes
TensorFlow tensors, ``tf.IndexedSlices`` (anything with ``values``, ``indices`` and
``dense_shape``), Keras or TensorFlow variables and numpy arrays without importing TensorFlow
itself (only ``tensorboard=DIR`` does)::

    recorder = Recorder(every=10, timeline="timeline.json", tensorboard="logs/grads")
    for step in range(1, steps + 1):
        ...                                       # compute loss and grads, apply them
        if recorder.due(step):                    # step % every == 0
            recorder.record(step, "train.py:57", loss,
                            [(v.path, g, v) for g, v in zip(grads, variables)],
                            losses={"main": (main_value, [(v.path, g_main) ...]),
                                    "aux": (aux_value, [(v.path, g_aux) ...])})
    timeline = recorder.close()                   # findings computed, files written

Each entry is ``(variable name, gradient or None, variable value or None)``; a None gradient
is recorded with status ``none:unexplained`` unless a fourth item gives the status (a
front-end that knows the cause), a fifth the cause in words (``cause``: the cut points as
``node (Op) at FILE:LINE``, or why there is no path) and a sixth the cut points
(``cut_points``: ``node``, ``op``, ``kind``, ``source`` each, as contract section 2), and a
seventh the cause itself (``results/causes.py``; its id and facts are the record's ``why``).
``losses`` is optional: per-loss gradients when a step has several, for their norms and the
cosine between every two losses' gradients on each variable both reach (a negative cosine:
the losses pull that variable in opposite directions).

A front-end that reduces gradients where they live (the Keras Monitor does, in the traced
step) passes :class:`Summary` objects instead of tensors, for gradients and values alike,
and ``dots={(loss_a, loss_b): {variable: dot product}}`` for the cosines.

The timeline JSON extends contract section 7: top level ``tensorflow``, ``device``,
``every``, ``thresholds`` (and ``allow_none``, the globs given); per variable also ``sparse``
and ``shape``, for a None gradient whose cause is known ``cause`` and ``cut_points``, and
``"allowed": true`` for a None gradient an ``allow_none`` glob names (no ``none``
finding), for a non-finite gradient whose origin was found ``nan_origin`` (as a run's
source has it: ``node``, ``op``, ``source``, ``where``, ``value``, ``tf_op``); per step
with several losses ``losses`` (``{name: {"value", "variables": {name: {"status", "norm",
"zero_fraction", "sparse"}}}}``) and ``cosine`` (``[{"losses":
[a, b], "variables": {name: cosine or null}}]``).
"""

from __future__ import annotations

import math
import os
import sys
from collections.abc import Mapping, Sequence
from fnmatch import fnmatchcase
from itertools import combinations
from typing import Any

import numpy as np

from gradscope._src.results.status import decide
from gradscope._src.results.summary import Summary as Summary
from gradscope._src.timeline.arrays import dense as dense
from gradscope._src.timeline.arrays import is_sparse as is_sparse
from gradscope._src.timeline.findings import Thresholds, find, ordered, same_kind

TIMELINE_VERSION = 1
#: A None gradient's status when nothing more is known of it (the one rule's, ``decide``).
NONE_STATUS = str(decide(has_gradient=False))

#: ``(name, gradient, value)``, then optionally ``status``, ``cause`` and ``cut_points``.
Entry = Sequence[Any]


def _square_sum(flat: np.ndarray[Any, Any]) -> float:
    """Sum of squares: one BLAS dot in the array's own precision (fast), again in float64
    when that overflowed (a float32 norm above ~1.8e19)."""
    with np.errstate(over="ignore", invalid="ignore"):
        total = float(np.dot(flat, flat))
    if math.isinf(total):
        wide = flat.astype(np.float64)
        total = float(np.dot(wide, wide))
    return total


def norm(array: np.ndarray[Any, Any]) -> float | None:
    """The L2 norm; None when it is not finite (a NaN or an infinity inside)."""
    flat = np.ravel(array)
    if not np.issubdtype(flat.dtype, np.floating):
        flat = flat.astype(np.float64)
    value = math.sqrt(_square_sum(flat)) if flat.size else 0.0
    return value if math.isfinite(value) else None


def gradient_stats(gradient: Any) -> dict[str, Any]:
    """``status``, ``norm``, ``zero_fraction`` and ``sparse`` of a gradient (None: no gradient)."""
    if gradient is None:
        return {"status": NONE_STATUS, "norm": None, "zero_fraction": None, "sparse": False}
    if isinstance(gradient, Summary):
        size, zeros, value = gradient.size, gradient.zeros, gradient.norm
    else:
        array = dense(gradient)
        size, zeros = array.size, int(array.size - np.count_nonzero(array))
        value = norm(array)  # finite exactly when every element is (NaN or Inf: not finite)
    status = decide(has_gradient=True, finite=value is not None, all_zero=zeros == size)
    return {
        "status": str(status),
        "norm": value,
        "zero_fraction": zeros / size if size else 0.0,
        "sparse": gradient.sparse if isinstance(gradient, Summary) else is_sparse(gradient),
    }


def cosine(a: np.ndarray[Any, Any], b: np.ndarray[Any, Any]) -> float | None:
    """The cosine between two gradients, None when either is zero or not finite."""
    a64, b64 = a.astype(np.float64).ravel(), b.astype(np.float64).ravel()
    na, nb = float(np.linalg.norm(a64)), float(np.linalg.norm(b64))
    if not (na > 0 and nb > 0 and math.isfinite(na) and math.isfinite(nb)):
        return None
    return max(-1.0, min(1.0, float(np.dot(a64, b64)) / (na * nb)))


def _shape(gradient: Any, value: Any) -> list[int]:
    for given in (value, gradient):
        if isinstance(given, Summary):
            return list(given.shape)
    if value is not None:
        return [int(d) for d in np.shape(value)]
    if gradient is not None and is_sparse(gradient):
        return [int(d) for d in np.asarray(gradient.dense_shape)]
    return [int(d) for d in np.shape(gradient)] if gradient is not None else []


def _weight_norm(value: Any) -> float | None:
    if isinstance(value, Summary):
        return value.norm
    return norm(np.asarray(value)) if value is not None else None


def _finite(value: Any) -> float | None:
    number = math.nan if value is None else float(np.asarray(value, dtype=np.float64).sum())
    return number if math.isfinite(number) else None


class Recorder:
    """Records gradients every ``every`` steps; :meth:`close` finds problems and writes files.

    Args:
        every: record steps that are multiples of ``every`` (:meth:`due`).
        timeline: where :meth:`close` writes the timeline JSON, or None.
        tensorboard: a directory for TensorBoard event files (scalars and histograms per
            variable, written as records come), or None.
        program: the ``program`` of the timeline JSON (default: ``sys.argv[0]``).
        thresholds: when a series becomes a finding (:class:`Thresholds` defaults).
        histograms: also write gradient histograms to TensorBoard.
        allow_none: globs of variables whose None gradient is expected (``run --allow-none``):
            such a record is marked ``"allowed": true`` and makes no ``none`` finding.
        site_tags: prefix every TensorBoard tag with its site (``FILE:LINE/``), as
            ``gradscope run`` does; else only those of a site after the first one.
    """

    def __init__(
        self,
        every: int = 1,
        timeline: str | os.PathLike[str] | None = None,
        tensorboard: str | os.PathLike[str] | None = None,
        *,
        program: str | None = None,
        thresholds: Thresholds | None = None,
        histograms: bool = True,
        allow_none: Sequence[str] = (),
        site_tags: bool = False,
    ) -> None:
        if not 1 <= int(every) <= MAX_EVERY:
            raise ValueError(f"every must be from 1 to 2**63-1 steps, saw {every!r}")
        self.every = int(every)
        self.timeline = os.fspath(timeline) if timeline is not None else None
        self.program = program if program is not None else (sys.argv[0] or "<python>")
        self.thresholds = thresholds or Thresholds()
        self.histograms = histograms and tensorboard is not None
        self.allow_none = tuple(allow_none)
        self.device: str | None = None  # where the gradients were computed, when known
        self.steps: list[dict[str, Any]] = []
        self._board: Any = None
        if tensorboard is not None:
            from gradscope._src.timeline.tensorboard import Board

            self._board = Board(os.fspath(tensorboard), histograms=histograms, sites=site_tags)
        self._closed: dict[str, Any] | None = None
        self.notices: list[dict[str, Any]] = []  # findings no step shows (FLAG_KINDS)

    def due(self, step: int) -> bool:
        """Whether ``step`` is one to record (a multiple of ``every``)."""
        return step % self.every == 0

    def record(
        self,
        step: int,
        site: str,
        loss: Any,
        entries: Sequence[Entry],
        *,
        losses: Mapping[str, tuple[Any, Sequence[Entry]]] | None = None,
        dots: Mapping[tuple[str, str], Mapping[str, float]] | None = None,
        gradients: Mapping[str, Any] | None = None,
        loss_scaled: bool = False,
        origins: Mapping[str, Any] | None = None,
    ) -> dict[str, Any]:
        """Record one step of one site, whether or not it is :meth:`due`.

        Args:
            step: the training step (counted from 1).
            site: where the gradients were computed (``FILE:LINE``).
            loss: the loss value (a scalar tensor, array or float; None when unknown).
            entries: ``(name, gradient, value[, status[, cause[, cut_points]]])`` per
                variable.
            losses: per loss, ``(value, entries)`` when the step has several losses.
            dots: per pair of losses ``(a, b)``, the dot product of their gradients per
                variable: the cosines' numerators when the entries are :class:`Summary` objects.
            gradients: the whole gradients by variable, for TensorBoard histograms only, when
                the entries hold :class:`Summary` objects (the record's numbers come from
                the entries either way).
            loss_scaled: the step's optimizer is Keras' ``LossScaleOptimizer`` with a dynamic
                scale (mixed precision): it skips a step whose gradients are not all finite,
                and such a record is marked ``"skipped": true``.
            origins: by variable, where its non-finite gradient's NaN or infinity first
                appeared (a ``NanOrigin``), recorded as its ``nan_origin``.

        Returns:
            The step record, as it appears in the timeline JSON.
        """
        self._closed = None  # recording again after close(): the next close() writes anew
        variables = {}
        for entry in entries:
            stats = _stats(entry)
            value = entry[2] if len(entry) > 2 else None
            stats["weight_norm"] = _weight_norm(value)
            stats["shape"] = _shape(entry[1], value)
            if str(stats["status"]).startswith("none") and any(
                fnmatchcase(str(entry[0]), pattern) for pattern in self.allow_none
            ):
                stats["allowed"] = True
            found = (origins or {}).get(str(entry[0]))
            if found is not None and stats["status"] == "nan":
                stats["nan_origin"] = found.to_dict()  # where its NaN first appeared
            variables[str(entry[0])] = stats
        out: dict[str, Any] = {
            "step": int(step),
            "site": site,
            "loss": _finite(loss),
            "variables": variables,
        }
        if losses:
            out["losses"], out["cosine"] = _per_loss(losses, dots or {})
        if loss_scaled and any(v["status"] == "nan" for v in variables.values()):
            out["skipped"] = True  # the loss scale overflowed: the weights did not move
        self.steps.append(out)
        if self._board is not None:
            whole = gradients if gradients is not None else {str(e[0]): e[1] for e in entries}
            self._board.write(out, whole)
        return out

    def findings(self) -> list[dict[str, Any]]:
        """The findings of the steps recorded so far."""
        return ordered(find(self.steps, self.thresholds) + self.notices)

    def keep(self, problems: Sequence[Mapping[str, Any]]) -> None:
        """Carry the problems a run reported (``site``, ``step``, ``variable``, ``kind``,
        ``message``, and ``cut_points``/``fix`` when known) as findings, so that the timeline
        holds every one of them and ``check --timeline`` fails as the run did: those the
        recorded steps already show (the same site, variable and kind; a run's
        ``unexpected-none`` is a timeline's ``none``) and those already noticed are left
        as they are."""
        held = {(f["site"], f["variable"], f["kind"]) for f in self.findings()}
        for p in problems:
            kind = same_kind(str(p["kind"]))
            if (p["site"], p["variable"], kind) in held:
                continue
            held.add((p["site"], p["variable"], kind))
            finding = {"kind": str(p["kind"]), "site": p["site"], "variable": p["variable"],
                       "from_step": int(p["step"]), "message": p["message"]}  # fmt: skip
            finding.update({k: p[k] for k in ("cut_points", "fix") if p.get(k)})
            self.notices.append(finding)
        self._closed = None  # the next close() writes them

    def to_dict(self) -> dict[str, Any]:
        """The timeline JSON (contract section 7), findings included."""
        tf = sys.modules.get("tensorflow")  # named when the program has it; never imported here
        return {
            "gradscope": TIMELINE_VERSION,
            "program": self.program,
            "tensorflow": getattr(tf, "__version__", None),
            "device": self.device,
            "every": self.every,
            "thresholds": self.thresholds.to_dict(),
            **({"allow_none": list(self.allow_none)} if self.allow_none else {}),
            "steps": self.steps,
            "findings": self.findings(),
        }

    def close(self) -> dict[str, Any]:
        """Compute the findings, write the timeline and close TensorBoard; idempotent until
        the next :meth:`record` (a Monitor used by several ``fit`` calls closes after each).

        Returns:
            The timeline JSON as a dictionary.
        """
        if self._closed is None:
            self._closed = self.to_dict()
            if self.timeline is not None:
                write(self.timeline, self._closed)
            if self._board is not None:
                self._board.close()
        return self._closed

    def __enter__(self) -> Recorder:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _stats(entry: Entry) -> dict[str, Any]:
    """:func:`gradient_stats` of an entry, with the status, cause and cut points it gives
    a None gradient (and the cause of one all zero)."""
    stats = gradient_stats(entry[1])
    if entry[1] is None and len(entry) > 3 and entry[3]:
        stats["status"] = str(entry[3])
    if (entry[1] is None or stats["status"] == "zero") and len(entry) > 4 and entry[4]:
        stats["cause"] = str(entry[4])  # why no gradient, or why it is all zero
    if entry[1] is None and len(entry) > 5 and entry[5]:
        stats["cut_points"] = [dict(c) for c in entry[5]]
    if entry[1] is None and len(entry) > 6 and entry[6] is not None:
        stats["why"] = entry[6].to_dict()  # the cause itself: its id and facts, for its fix
    return stats


def _per_loss(
    losses: Mapping[str, tuple[Any, Sequence[Entry]]],
    dots: Mapping[tuple[str, str], Mapping[str, float]],
) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    per: dict[str, Any] = {}
    grads: dict[str, dict[str, Any]] = {}
    for name, (value, entries) in losses.items():
        per[name] = {
            "value": _finite(value),
            "variables": {str(e[0]): _stats(e) for e in entries},
        }
        grads[name] = {str(e[0]): e[1] for e in entries if e[1] is not None}
    pairs = []
    for a, b in combinations(losses, 2):
        shared = [v for v in grads[a] if v in grads[b]]
        given = dots.get((a, b), {})
        pairs.append(
            {
                "losses": [a, b],
                "variables": {v: _cosine(grads[a][v], grads[b][v], given.get(v)) for v in shared},
            }
        )
    return per, pairs


def _cosine(a: Any, b: Any, dot: float | None) -> float | None:
    if not isinstance(a, Summary) or not isinstance(b, Summary):
        return cosine(dense(a), dense(b))
    na, nb = a.norm, b.norm
    if dot is None or not math.isfinite(dot) or not na or not nb:
        return None
    return max(-1.0, min(1.0, dot / (na * nb)))


#: The largest ``every``: steps are int64 (``optimizer.iterations``, TensorFlow's step
#: counters); ``step % every`` with a larger one raised OverflowError once ``fit`` ran.
MAX_EVERY = 2**63 - 1


def write(path: str, timeline: Mapping[str, Any]) -> None:
    """Write a timeline as JSON through gradscope's one writer
    (:func:`~gradscope._src.writable.write`: atomic, regular files only, the umask's
    permissions); no NaN: those are null already.

    Raises:
        gradscope._src.writable.Unwritable: an OSError naming the path and why (a device node, a
            symbolic link, a full disk).
    """
    from gradscope._src.writable import write as write_file

    write_file(path, _lines(timeline).encode("utf-8", "backslashreplace"), parents=True)


def _lines(timeline: Mapping[str, Any]) -> str:
    """The timeline's JSON with one step (and one finding) per line: readable and diffable,
    and written by the json module's C encoder (an indented dump is pure Python: 1.7-1.8x
    slower)."""
    import json

    dumps = json.dumps
    out = []
    for key, value in timeline.items():
        if isinstance(value, list) and value:
            text = "[\n  " + ",\n  ".join(dumps(v, allow_nan=False) for v in value) + "\n ]"
        else:
            text = dumps(value, allow_nan=False)
        out.append(f" {dumps(key)}: {text}")
    return "{\n" + ",\n".join(out) + "\n}\n"


def load(path: str) -> dict[str, Any]:
    """Read a timeline JSON file, its version and types checked (:func:`reader.load`).

    Raises:
        ValueError: not a gradscope timeline this gradscope reads (the message says where).
    """
    from gradscope._src.timeline.reader import load as read

    return read(path)
