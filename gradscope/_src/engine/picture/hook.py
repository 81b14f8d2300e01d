"""Inside the trace: hand one loss's graph to ``picture.draw``, and check its gradients for NaN.

Called by ``PairBuilder.differentiate`` only when pictures were asked for, so an ordinary run
pays nothing. The NaN checks are one ``reduce_all(is_finite)`` per tensor behind a link that
carries gradient; they run in the same single call that fetches the norms.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from gradscope._src.engine import cuts as flow
from gradscope._src.engine.graph import Extracted
from gradscope._src.engine.picture.draw import Draft, Picture, Scene, draw
from gradscope._src.engine.protocol import Traceable, VariableEntry
from gradscope._src.results.facts import CutPoint, PairFacts


class PairBuilder(Protocol):
    """What a picture reads of ``pairs.PairBuilder`` (a protocol, so neither imports the other)."""

    tf: Any
    x: Extracted
    model: Traceable
    variables: list[VariableEntry]
    handle_ids: list[int | None]
    vsets: list[int]

    def cut_point_at(self, index: int, kind: str) -> CutPoint: ...


@dataclass
class PictureStatic:
    """A loss's picture before the run, and what tells which of its links carry NaN.

    ``flags`` is one bool per checked tensor (``tensors`` names them), or None when none is
    checked. A variable's own gradient is not checked again: its pair already says whether
    it is finite (``handles`` maps its handle's tensor to the variable).
    """

    draft: Draft
    tensors: list[int]
    flags: Any
    handles: dict[int, str]

    def outputs(self, prefix: str) -> dict[str, Any]:
        return {} if self.flags is None else {f"{prefix}/finite_links": self.flags}

    def finish(self, numbers: dict[str, Any], prefix: str, pairs: Sequence[PairFacts]) -> Picture:
        """The picture, its links marked ``nan`` from the fetched flags and the pairs."""
        flags = self._flags(numbers, prefix)
        finite = {t: bool(f) for t, f in zip(self.tensors, flags, strict=True)}
        by_name = {p.variable: p.finite for p in pairs}
        finite.update({t: by_name.get(v, True) for t, v in self.handles.items()})
        checks = self.draft.checks
        return self.draft.finish([all(finite.get(t, True) for t in c) for c in checks])

    def _flags(self, numbers: dict[str, Any], prefix: str) -> Any:
        return [] if self.flags is None else numbers[f"{prefix}/finite_links"]


@dataclass
class Traced:
    """What ``differentiate`` found for one loss."""

    loss: str
    target_op: int
    reach: list[bool]
    mask: int
    received: set[int]
    cuts: list[flow.Cut]
    stop_ops: set[int]
    grads: dict[int, Any]  # tensor id -> its gradient (None when TensorFlow gave none)
    live: list[int] | None = None  # per op, variables no earlier cut took (flow.find_cuts)


def trace(builder: PairBuilder, traced: Traced, *, expand: bool) -> PictureStatic:
    """The picture of one loss and the checks that will tell which links carry NaN."""
    tf, x = builder.tf, builder.x
    ops = x.tf_ops
    handle_ops = {x.graph.producer[t]: i for i, t in enumerate(builder.handle_ids) if t is not None}
    scene = Scene(
        loss=traced.loss,
        graph=x.graph,
        names=[op.name for op in ops],
        variables=[v.name for v in builder.variables],
        handle_ops=handle_ops,
        all_sets=builder.vsets,
        mask=traced.mask,
        reach=traced.reach,
        received=traced.received,
        cuts=traced.cuts,
        stop_ops=traced.stop_ops,
        target_op=traced.target_op,
        locate=lambda i: builder.model.locate(ops[i]),
        visible=lambda i: builder.model.visible(ops[i]),
        describe=lambda i: builder.model.describe(ops[i]),
        sparse={t for t, g in traced.grads.items() if isinstance(g, tf.IndexedSlices)},
        cut_point=builder.cut_point_at,
        live=traced.live,
    )
    draft = draw(scene, expand=expand)
    handles = {t: builder.variables[i].name for t, i in _handle_tensors(builder).items()}
    return _checked(tf, draft, traced.grads, handles)


def _handle_tensors(builder: PairBuilder) -> dict[int, int]:
    return {t: i for i, t in enumerate(builder.handle_ids) if t is not None}


def _checked(
    tf: Any, draft: Draft, grads: dict[int, Any], handles: dict[int, str]
) -> PictureStatic:
    """One flag per tensor behind a link that carries gradient: is its gradient finite?

    One op per float32 tensor: ``reduce_sum`` is NaN or Inf as soon as one element is
    (a float32 sum past 3e38 would count too; such a gradient has exploded anyway).
    Half-precision gradients are summed in float32 so they cannot overflow.
    """
    wanted = dict.fromkeys(t for check in draft.checks for t in check if t not in handles)
    tensors = [t for t in wanted if _values(tf, grads.get(t)) is not None]
    if not tensors:
        return PictureStatic(draft, [], None, handles)
    sums = [_sum(tf, _values(tf, grads[t])) for t in tensors]
    return PictureStatic(draft, tensors, tf.math.is_finite(tf.stack(sums)), handles)


def _sum(tf: Any, values: Any) -> Any:
    if values.dtype in (tf.float16, tf.bfloat16):
        values = tf.cast(values, tf.float32)
    total = tf.reduce_sum(values)
    return total if total.dtype == tf.float32 else tf.cast(total, tf.float32)


def _values(tf: Any, grad: Any) -> Any:
    """A gradient's floating values (``IndexedSlices``' rows, a complex one's moduli)."""
    if grad is None:
        return None
    values = grad.values if isinstance(grad, tf.IndexedSlices) else grad
    if values.dtype.is_complex:
        return tf.abs(values)
    return values if values.dtype.is_floating else None
