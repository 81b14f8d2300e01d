"""Per loss: one ``tf.gradients`` call, the static facts of every pair, and the numbers to fetch."""

from __future__ import annotations

import functools
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from gradscope._src.engine import bodies, custom_gradient, retrace
from gradscope._src.engine import cuts as flow
from gradscope._src.engine.bodies import Descent, InnerCut
from gradscope._src.engine.graph import Extracted
from gradscope._src.engine.norms import norms_and_maxima
from gradscope._src.engine.picture import hook as picture_hook
from gradscope._src.engine.status import measured
from gradscope._src.errors import BuildError
from gradscope._src.location import Location
from gradscope._src.results.facts import Comparison, CutPoint, LossFacts, PairFacts

if TYPE_CHECKING:
    from gradscope._src.engine.protocol import LossEntry, Traceable, VariableEntry

# "No gradient defined for operation'adjust_contrast' (op type: AdjustContrastv2)" (sic)
_NO_GRADIENT = re.compile(r"operation\s*'([^']+)'")


@dataclass
class PairStatic:
    """What is known about one pair once the trace is done, before anything runs."""

    variable: str
    requested: bool
    has_gradient: bool = False
    reachable: bool = False
    sparse: bool = False
    cut_points: list[CutPoint] = field(default_factory=list)
    slot: int | None = None  # index into the loss's stacked norm/finite/zero outputs


@dataclass
class LossStatic:
    """One loss after tracing: the pairs, and the gradient tensors (for comparisons)."""

    name: str
    shape: tuple[int | None, ...]
    pairs: list[PairStatic]
    value: Any
    grads: dict[str, Any] = field(default_factory=dict)
    picture: picture_hook.PictureStatic | None = None  # only when pictures were asked for

    def facts(self, numbers: dict[str, Any], prefix: str) -> LossFacts:
        value = float(numbers[f"{prefix}/value"])
        pairs = []
        for p in self.pairs:
            norm = finite = zero = None
            if p.slot is not None:
                norm = float(numbers[f"{prefix}/norm"][p.slot])
                finite, zero = measured(norm, float(numbers[f"{prefix}/max"][p.slot]))
            pairs.append(
                PairFacts(
                    variable=p.variable,
                    requested=p.requested,
                    has_gradient=p.has_gradient,
                    reachable=p.reachable,
                    sparse=p.sparse,
                    norm=norm if norm is not None and math.isfinite(norm) else None,
                    finite=True if finite is None else finite,
                    all_zero=bool(zero),
                    cut_points=tuple(p.cut_points),
                )
            )
        drawn = self.picture.finish(numbers, prefix, pairs) if self.picture else None
        return LossFacts(self.name, value, self.shape, tuple(pairs), picture=drawn)


def pair_outputs(tf: Any, prefix: str, static: LossStatic) -> dict[str, Any]:
    """The tensors the function returns for one loss."""
    out = {f"{prefix}/value": static.value}
    grads = [static.grads[p.variable] for p in static.pairs if p.slot is not None]
    if grads:
        out[f"{prefix}/norm"], out[f"{prefix}/max"] = norms_and_maxima(tf, grads)
    if static.picture is not None:
        out.update(static.picture.outputs(prefix))
    return out


class PairBuilder:
    """Differentiates each loss inside the trace and finds its cut points."""

    def __init__(
        self,
        tf: Any,
        model: Traceable,
        extracted: Extracted,
        variables: Sequence[VariableEntry],
        handles: Sequence[Any],
        *,
        pictures: bool = False,
        expand: bool = False,
    ) -> None:
        self.tf = tf
        self.pictures, self.expand = pictures, expand
        self.model = model
        self.x = extracted
        self.variables = list(variables)
        self.handle_ids = [extracted.tensor_id(h) for h in handles]
        self.handles = list(handles)
        sources = flow.source_bits(self.handle_ids)
        self.vsets = flow.variable_sets(extracted.graph, sources)
        self.descent = Descent()

    def differentiate(self, loss: LossEntry) -> LossStatic:
        tf = self.tf
        target = tf.convert_to_tensor(loss.tensor)
        if not (target.dtype.is_floating or target.dtype.is_complex):
            raise BuildError(
                loss.location or _nowhere(self.model.target),
                f"losses.{loss.name}",
                f"a loss must be a floating-point tensor, saw {target.dtype.name}",
            )
        requested = [
            i for i, v in enumerate(self.variables) if v.trainable and loss.includes(v.name)
        ]
        mask = sum(1 << i for i in requested)
        graph = self.x.graph
        target_op = self.x.op_index[target.op.name]
        reach = flow.reaching(graph, target_op)
        vsets = [bits & mask for bits in self.vsets]
        handle_set = {self.handle_ids[i] for i in requested}
        probes = [
            t
            for t, p in enumerate(graph.producer)
            if reach[p] and vsets[p] and graph.differentiable[t] and t not in handle_set
        ]
        xs = [self.handles[i] for i in requested] + [self.x.tensors[t] for t in probes]
        grads = self._gradients(loss, target, xs)
        var_grads = dict(zip(requested, grads[: len(requested)], strict=True))
        received = {
            t for t, g in zip(probes, grads[len(requested) :], strict=True) if g is not None
        }
        received |= {
            h
            for i, g in var_grads.items()
            if g is not None and (h := self.handle_ids[i]) is not None
        }
        target_id = self.x.tensor_id(target)
        if target_id is not None:
            received.add(target_id)
        stop_ops = {self.x.op_index[t.op.name] for t in loss.stop_tensors}
        live: list[int] = []
        cuts = flow.find_cuts(graph, vsets, reach, received, stop_ops, live_out=live)
        dims = tuple(target.shape.as_list()) if target.shape.rank is not None else (None,)
        static = LossStatic(loss.name, dims, [], self.value_of(target))
        inner = self.descent.descend(self.x, live, received, reach)
        zeroed: set[int] = set()
        if loss.unconnected == "zero":  # the cut analysis above saw TensorFlow's Nones
            zeroed = {i for i, g in var_grads.items() if g is None}
            var_grads = {i: self._zero_if_none(i, g) for i, g in var_grads.items()}
        located = bodies.located(self.x, cuts, inner)
        self.fill_pairs(static, requested, var_grads, located, target_op, zeroed)
        if self.pictures:
            ids = [self.handle_ids[i] for i in requested] + probes
            grads_by_id = {t: g for t, g in zip(ids, grads, strict=True) if t is not None}
            traced = picture_hook.Traced(
                loss.name, target_op, reach, mask, received, cuts, stop_ops, grads_by_id, live
            )
            static.picture = picture_hook.trace(self, traced, expand=self.expand)
        return static

    def _gradients(self, loss: LossEntry, target: Any, xs: list[Any]) -> list[Any]:
        try:
            return retrace.gradients(self.tf, loss, xs, target)
        except LookupError as exc:
            # "No gradient defined for operation 'N3/Foo' (op type: Foo)"
            match = _NO_GRADIENT.search(str(exc))
            index = self.x.op_index.get(match.group(1)) if match else None
            op = self.x.tf_ops[index] if index is not None else None
            if op is None:
                raise self.model.trace_error(exc) from exc
            said = LookupError(
                f"loss {loss.name!r}: TensorFlow has no gradient registered for op type "
                f"{op.type}, so it refuses to differentiate the loss through it (wrap the op's "
                "input in tf.stop_gradient if no gradient should flow there, or use a "
                "differentiable op)"
            )
            raise self.model.trace_error(_OpError(op, said)) from exc

    def _zero_if_none(self, index: int, grad: Any) -> Any:
        if grad is not None:
            return grad
        variable = self.variables[index].variable
        return self.tf.zeros(variable.shape, variable.dtype.base_dtype)

    def value_of(self, target: Any) -> Any:
        tf = self.tf
        value = tf.math.real(target) if target.dtype.is_complex else target
        return tf.reduce_sum(tf.cast(value, tf.float64))

    def fill_pairs(
        self,
        static: LossStatic,
        requested: list[int],
        var_grads: dict[int, Any],
        cuts: list[InnerCut],
        target_op: int,
        zeroed: set[int],
    ) -> None:
        located = [(cut, self._located(cut)) for cut in cuts]
        visible = functools.cache(self.model.visible)  # read once per op
        slot = 0
        for i, v in enumerate(self.variables):
            pair = PairStatic(v.name, requested=i in var_grads)
            static.pairs.append(pair)
            if not pair.requested:
                continue
            grad = var_grads[i]
            pair.reachable = bool(self.vsets[target_op] >> i & 1)
            pair.has_gradient = grad is not None
            cut_all = grad is None or i in zeroed  # no gradient but TensorFlow's zeros
            pair.cut_points.extend(flow.listed(i, located, cut_all, visible))
            if grad is not None:
                pair.sparse = isinstance(grad, self.tf.IndexedSlices)
                pair.slot = slot
                slot += 1
                static.grads[v.name] = grad

    def _located(self, cut: InnerCut) -> CutPoint:
        """The cut point of ``cut``, with the places further on that lose its path again."""
        point = self.point_of(cut.op, cut.kind)
        if not cut.later:
            return point
        return flow.with_later(point, [self.point_of(op, cut.kind) for op in cut.later])

    def cut_point_at(self, index: int, kind: str) -> CutPoint:
        """The cut point for op ``index`` of the traced graph, as reports and pictures name it."""
        return self.point_of(self.x.tf_ops[index], kind)

    def point_of(self, op: Any, kind: str) -> CutPoint:
        """The cut point for the TensorFlow op ``op`` (of the trace or of a body inside it)."""
        variable = self._integer_variable(op) if kind == flow.NONDIFFERENTIABLE else None
        if variable is not None:  # no op made these values integer: the variable holds them
            return CutPoint(variable.name, op.type, kind, variable.source)
        custom = custom_gradient.site(op, self.model.display_path)
        if custom is not None:  # the user's grad_fn gave this input None
            return CutPoint(custom[0], op.type, kind, custom[1])
        return flow.cut_point(op, kind, self.model.locate)

    def _integer_variable(self, op: Any) -> VariableEntry | None:
        """The analysed variable of an integer (or boolean) type that ``op`` reads, if any."""
        if not op.inputs or not op.outputs:
            return None
        dtype = op.outputs[0].dtype
        if dtype.is_floating or dtype.is_complex:
            return None
        handle = self.x.tensor_id(op.inputs[0])
        for variable, known in zip(self.variables, self.handle_ids, strict=True):
            if known is not None and known == handle:
                kind = variable.variable.dtype
                return None if kind.is_floating or kind.is_complex else variable
        return None

    def compare(
        self, statics: list[LossStatic], pairs: Sequence[tuple[str, str]]
    ) -> dict[str, Any]:
        """Dot products and sign agreement of two losses' gradients, per shared variable."""
        tf = self.tf
        by_name = {s.name: s for s in statics}
        out: dict[str, Any] = {}
        self.shared: list[list[str]] = []
        sides: dict[tuple[str, str], tuple[Any, Any, Any]] = {}
        for j, (a, b) in enumerate(pairs):
            ga, gb = by_name[a].grads, by_name[b].grads
            shared = [v.name for v in self.variables if v.name in ga and v.name in gb]
            self.shared.append(shared)
            if not shared:
                continue
            dots, signs, squares_a, squares_b = [], [], [], []
            for name in shared:
                x, sign_x, xx = self._side(sides, a, name, ga[name])
                y, sign_y, yy = self._side(sides, b, name, gb[name])
                dots.append(tf.reduce_sum(x * y))
                squares_a.append(xx)
                squares_b.append(yy)
                # 1 where the signs agree, 0 where not; float ops only
                agree = 1.0 - tf.minimum(tf.abs(sign_x - sign_y), 1.0)
                signs.append(tf.reduce_mean(agree))
            out[f"cmp{j}/dot"] = tf.stack(dots)
            out[f"cmp{j}/sign"] = tf.stack(signs)
            out[f"cmp{j}/aa"] = tf.stack(squares_a)
            out[f"cmp{j}/bb"] = tf.stack(squares_b)
        return out

    def _side(
        self, cache: dict[tuple[str, str], tuple[Any, Any, Any]], loss: str, name: str, grad: Any
    ) -> tuple[Any, Any, Any]:
        """One loss's gradient of one variable, densified in float64, its signs and its sum of
        squares; built once however many pairs the loss is in (``diff`` of every pair)."""
        key = (loss, name)
        if key not in cache:
            tf = self.tf
            x = tf.cast(tf.convert_to_tensor(grad), tf.float64)
            # float64 sums of squares, so a cosine is exact where A = -B (a GAN's grad_loss)
            cache[key] = (x, tf.sign(x), tf.reduce_sum(x * x))
        return cache[key]

    def comparison(self, numbers: dict[str, Any], index: int, a: str, b: str) -> Comparison:
        """The fetched numbers of comparison ``index`` as plain data."""
        shared = self.shared[index]
        if not shared:
            return Comparison(a, b)

        def named(key: str) -> dict[str, float]:
            values = numbers[f"cmp{index}/{key}"]
            return {n: float(v) for n, v in zip(shared, values, strict=True)}

        return Comparison(
            a,
            b,
            dots=named("dot"),
            sign_agreement=named("sign"),
            squares_a=named("aa"),
            squares_b=named("bb"),
        )


class _OpError(Exception):
    """A TensorFlow error attributed to one op of the trace."""

    def __init__(self, op: Any, cause: BaseException) -> None:
        self.op = op
        self.cause = cause
        super().__init__(str(cause))


def _nowhere(target: str) -> Location:
    """Where a loss whose line is unknown is: its target, at line 1."""
    return Location(target, 1, 1)
