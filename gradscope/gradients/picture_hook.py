"""Inside the trace: hand one loss's graph to ``picture.draw``, and check its gradients for NaN.

Called by ``PairBuilder.differentiate`` only when pictures were asked for, so an ordinary run
pays nothing. The NaN checks are one ``reduce_all(is_finite)`` per tensor behind a link that
carries gradient; they run in the same single call that fetches the norms.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from gradscope.gradients import flow
from gradscope.gradients.picture import Draft, Picture, Scene, draw

if TYPE_CHECKING:
    from gradscope.gradients.pairs import PairBuilder


@dataclass
class PictureStatic:
    """A loss's picture before the run, and the tensor of its per-link finiteness flags."""

    draft: Draft
    flags: Any  # a bool vector, one per link, or None when no link carries gradient

    def outputs(self, prefix: str) -> dict[str, Any]:
        return {} if self.flags is None else {f"{prefix}/finite_links": self.flags}

    def finish(self, numbers: dict[str, Any], prefix: str) -> Picture:
        if self.flags is None:
            return self.draft.finish([True] * len(self.draft.picture.links))
        return self.draft.finish([bool(f) for f in numbers[f"{prefix}/finite_links"]])


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


def trace(builder: PairBuilder, traced: Traced, *, expand: bool) -> PictureStatic:
    """The picture of one loss and the checks that will tell which links carry NaN."""
    tf, x = builder.tf, builder.x
    ops = x.tf_ops
    handle_ops = {x.graph.producer[t]: i for i, t in enumerate(builder.handle_ids) if t is not None}
    describe = getattr(builder.model, "node_of", None)
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
        describe=(lambda i: _said(describe(ops[i].name))) if describe else (lambda _i: None),
        sparse={t for t, g in traced.grads.items() if isinstance(g, tf.IndexedSlices)},
    )
    draft = draw(scene, expand=expand)
    flags = [_all_finite(tf, [traced.grads[t] for t in check]) for check in draft.checks]
    return PictureStatic(draft, tf.stack(flags) if flags else None)


def _said(node: Any) -> str | None:
    """The op a spec node names, as short as it reads: ``matmul``, ``Dense`` for a layer."""
    if node is None:
        return None
    if node.op == "layer":
        return str(node.attrs.get("class", "layer"))
    return str(node.op).rsplit(".", 1)[-1]


def _all_finite(tf: Any, grads: list[Any]) -> Any:
    checks = [_finite(tf, g) for g in grads if g is not None]
    checks = [c for c in checks if c is not None]
    if not checks:
        return tf.constant(True)
    return tf.reduce_all(tf.stack(checks))


def _finite(tf: Any, grad: Any) -> Any:
    values = grad.values if isinstance(grad, tf.IndexedSlices) else grad
    if values.dtype.is_complex:
        values = tf.abs(values)
    if not values.dtype.is_floating:
        return None
    return tf.reduce_all(tf.math.is_finite(values))
