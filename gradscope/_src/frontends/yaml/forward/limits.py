"""Every tensor a spec makes is held to ``--max-elements`` before anything large exists.

Three checks, each before TensorFlow or Keras allocates:

- **Keras weights**, by the shape a layer asks ``add_weight`` for: Keras creates (and fills)
  a weight eagerly the moment a layer builds, even inside a trace.
- **Ops that make many tensors** (``split``, ``unstack``, ``dynamic_partition``), by their
  count, before the op is made: ten million Python tensor objects take minutes to create.
- **Every op output** of the traced forward pass, by its static shape (``oversized``): graph
  mode allocates nothing until the function runs, so the whole graph is checked in between.
  A dimension TensorFlow cannot tell at trace time is bounded by the op's inputs (by their
  largest dimension, or their total size for ops that flatten or concatenate); when an op's
  size comes from a tensor's *value* (``zeros(shape=t)``, ``range(t)``, ``tile(x, t)``), no
  such bound exists, and the op is refused unless TensorFlow could compute that value while
  tracing (literals and the spec's small inputs are constants, so it nearly always can).

Gradient ops are not checked: each gradient has the shape of a forward tensor (or of a
variable), so the forward check bounds them too.
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from gradscope._src import patching
from gradscope._src.frontends.yaml.forward import budget
from gradscope._src.frontends.yaml.forward.budget import TooLarge as TooLarge


def _names(text: str) -> frozenset[str]:
    return frozenset(text.split())


#: The most tensors one op may make (``split``, ``unstack``, ``dynamic_partition``).
MAX_OUTPUTS = 10_000

#: Op types whose output size is given by the value of an input (a shape, a count, a size).
VALUE_SIZED = _names(
    """Fill Range Tile OneHot BroadcastTo Pad PadV2 MirrorPad LinSpace Empty ScatterNd
    SparseToDense MatrixDiagV2 MatrixDiagV3 Bincount DenseBincount RaggedBincount
    SparseBincount UnsortedSegmentSum UnsortedSegmentMax UnsortedSegmentMin
    UnsortedSegmentProd SegmentSum SegmentMean SegmentMax SegmentMin SegmentProd
    SegmentSumV2 SegmentMaxV2 SegmentMinV2 SegmentProdV2 SparseSegmentSum SparseSegmentMean
    SparseSegmentSqrtN SparseSegmentSumWithNumSegments SparseSegmentMeanWithNumSegments
    SparseSegmentSqrtNWithNumSegments DynamicStitch ParallelDynamicStitch Multinomial
    StatelessMultinomial ResizeBilinear ResizeNearestNeighbor ResizeBicubic ResizeArea
    ScaleAndTranslate CropAndResize ImageProjectiveTransformV2 ImageProjectiveTransformV3
    SpaceToBatchND SpaceToBatch Conv2DBackpropInput Conv3DBackpropInputV2
    DepthwiseConv2dNativeBackpropInput Conv2DBackpropFilter RFFT IRFFT RFFT2D IRFFT2D
    RFFT3D IRFFT3D RFFTND IRFFTND RaggedRange RaggedTensorToTensor TensorListReserve
    HistogramFixedWidth"""
)
#: Prefixes of the random op types, all of which take the shape to make as a value.
_RANDOM = ("Random", "StatelessRandom", "StatelessTruncated", "StatelessParameterized",
           "TruncatedNormal", "ParameterizedTruncated")  # fmt: skip
#: Op types whose unknown dimensions are bounded by their inputs' total size, not their
#: largest dimension (they flatten, concatenate or count elements).
FLATTENING = _names(
    """Where Reshape Unique UniqueV2 UniqueWithCounts UniqueWithCountsV2 ConcatV2 Concat
    ListDiff DynamicPartition DepthToSpace BatchToSpaceND BatchToSpace SparseReshape
    ParallelConcat"""
)
#: Op types reviewed to make outputs of a size TensorFlow cannot tell from known inputs, yet
#: bounded by those inputs (they select, deduplicate, partition or decode what they are given).
#: Any other op whose inputs all have known shapes and whose output does not got that size
#: from a value (``math.sobol_sample``'s ``num_results``), and is refused.
DATA_DEPENDENT = FLATTENING | _names(
    """GatherV2 GatherNd ResourceGather NonMaxSuppressionV2 NonMaxSuppressionV3
    NonMaxSuppressionV4 NonMaxSuppressionV5 NonMaxSuppressionWithOverlaps CTCGreedyDecoder
    CTCBeamSearchDecoder EditDistance SparseSlice SparseToSparseSetOperation Identity
    IdentityN StridedSlice Slice"""
)
#: Handles and containers: their static shape says nothing about the memory behind them.
_HANDLE_DTYPES = ("resource", "variant")


@dataclass(frozen=True)
class Oversize:
    """The first op output that is (or may be) too large, and why."""

    op: Any
    shape: tuple[int | None, ...] | None
    elements: int | None
    """The number of elements, or an upper bound when ``exact`` is false; None when unknown."""
    exact: bool

    def message(self, limit: int) -> str:
        """``would make a tensor of N elements (shape [...]), more than --max-elements M``."""
        shown = "unknown" if self.shape is None else _shape(self.shape)
        if self.elements is None:
            return (
                f"would make a tensor whose size (shape {shown}) depends on a value computed "
                f"when the spec runs ({self.op.type}), which gradscope cannot bound before "
                "running it; write the size as a literal in attrs"
            )
        if self.exact:
            return (
                f"would make a tensor of {self.elements} elements (shape {shown}), "
                f"more than --max-elements {limit}"
            )
        return (
            f"may make a tensor of up to {self.elements} elements (shape {shown}, its unknown "
            f"sizes bounded by its inputs), more than --max-elements {limit}"
        )


def _shape(dims: Sequence[int | None]) -> str:
    return "[" + ", ".join("?" if d is None else str(d) for d in dims) + "]"


@dataclass(frozen=True)
class _Bound:
    dims: tuple[int, ...] | None  # an upper bound of each dimension; None: the rank is unknown
    size: int

    @property
    def largest_dim(self) -> int:
        return max(self.dims, default=1) if self.dims is not None else self.size


def oversized(
    ops: Iterable[Any], limit: int, into: dict[str, _Bound] | None = None
) -> Oversize | None:
    """The first op output (in creation order) larger than ``limit`` elements, or None.

    Args:
        ops: a graph's operations in creation order (``graph.get_operations()``), so that
            every op comes after the ops it reads.
        limit: the most elements a tensor may have.
        into: where to keep each output's bound, by tensor name (``budget.py`` reads them).

    Returns:
        What is too large: an exact size, an upper bound where TensorFlow cannot tell a
        dimension, or no bound at all for an op whose size comes from a computed value.
    """
    bounds: dict[str, _Bound] = {} if into is None else into
    for op in ops:
        inputs = [bounds.get(t.name) or _bound(t, 1, 1) for t in op.inputs]
        dim_cap = max((b.largest_dim for b in inputs), default=1)
        size_cap = max(sum(b.size for b in inputs), 1)
        if op.type in FLATTENING:
            dim_cap = size_cap
        value_sized = op.type in VALUE_SIZED or op.type.startswith(_RANDOM)
        if all(_known(t) or _handle(t) for t in op.inputs) and op.type not in DATA_DEPENDENT:
            value_sized = True  # an unknown size from known inputs came from their values
        like = _shaped_like(op, bounds)
        for tensor in op.outputs:
            if value_sized and like is None and not _known(tensor):
                return Oversize(op, _dims(tensor), None, exact=False)
            bound = like or _bound(tensor, dim_cap, size_cap)
            if bound.size > limit:
                return Oversize(op, _dims(tensor), bound.size, exact=_known(tensor))
            bounds[tensor.name] = bound
    return None


def _shaped_like(op: Any, bounds: dict[str, _Bound]) -> _Bound | None:
    """For an op that makes a tensor of the shape it is given (``Fill``, ``BroadcastTo``,
    random ops), given ``tf.shape(t)``: the bound of ``t`` (Dropout on a masked tensor)."""
    if not (op.type in ("Fill", "BroadcastTo") or op.type.startswith(_RANDOM)):
        return None
    for tensor in op.inputs:
        if tensor.op.type == "Shape" and tensor.op.inputs[0].name in bounds:
            return bounds[tensor.op.inputs[0].name]
    return None


def first_empty(ops: Iterable[Any]) -> tuple[Any, tuple[int | None, ...]] | None:
    """The first floating-point op output whose static shape has no elements, if any.

    TensorFlow's graph optimizer divides by dimensions it knows when it rewrites products
    of broadcast tensors, and kills the process with SIGFPE when one of them is 0 (seen in
    TensorFlow 2.21 on the gradient of ``LayerNormalization`` of a ``[0, 3]`` variable). A
    gradient has no use for empty tensors, so a spec may not make one; integer tensors
    (shape vectors inside ``boolean_mask``, ``tf.shape`` of a scalar) are not affected.
    """
    for op in ops:
        for tensor in op.outputs:
            dtype = tensor.dtype
            if not (dtype.is_floating or dtype.is_complex):
                continue
            dims = _dims(tensor)
            if dims is not None and 0 in dims:
                return op, dims
    return None


def _dims(tensor: Any) -> tuple[int | None, ...] | None:
    shape = tensor.shape
    return None if shape.rank is None else tuple(shape.as_list())


def _handle(tensor: Any) -> bool:
    return getattr(tensor.dtype, "name", "") in _HANDLE_DTYPES


def _known(tensor: Any) -> bool:
    return bool(tensor.shape.is_fully_defined())


def _bound(tensor: Any, dim_cap: int, size_cap: int) -> _Bound:
    if getattr(tensor.dtype, "name", "") in _HANDLE_DTYPES:
        return _Bound((), 1)
    dims = _dims(tensor)
    if dims is None:
        return _Bound(None, size_cap)
    capped = tuple(dim_cap if d is None else d for d in dims)
    return _Bound(capped, math.prod(capped))


# --- Keras weights -----------------------------------------------------------------------


@contextlib.contextmanager
def weights_within(keras: Any, limit: int) -> Iterator[None]:
    """While active, a Keras layer asking for a weight larger than ``limit`` gets ``TooLarge``.

    ``Layer.add_weight`` is where every Keras layer (and every layer inside an application,
    a wrapper or an RNN cell) declares a weight's shape; Keras fills the weight right after,
    so the shape is checked there, before anything is allocated. Not thread-safe: the hook
    is on the class while a spec's layer node is built.
    """

    def make(original: Callable[..., Any]) -> Callable[..., Any]:
        def add_weight(self: Any, *args: Any, **kwargs: Any) -> Any:
            dims = _weight_dims(kwargs.get("shape", args[0] if args else None))
            name = kwargs.get("name") or "weight"
            if dims is not None and math.prod(dims) > limit:
                raise TooLarge(
                    f"would make a weight {name!r} of {math.prod(dims)} elements "
                    f"(shape {_shape(dims)}), more than --max-elements {limit}"
                )
            slow = budget.init_problem(kwargs.get("initializer"), dims or [])
            if slow is not None:
                raise TooLarge(f"weight {name!r}: {slow}")
            return original(self, *args, **kwargs)

        return add_weight

    with patching.Patches() as patches:
        patches.set("keras.layers.Layer.add_weight", make, owner=keras.layers.Layer,
                    everywhere=True)  # fmt: skip
        yield


def _weight_dims(shape: Any) -> list[int] | None:
    """The dimensions of a shape Keras was given, or None when it is not one."""
    if shape is None:
        return []
    try:
        dims = [int(d) for d in shape]
    except (TypeError, ValueError):
        return None  # Keras reports what is wrong with it
    return dims if all(d >= 0 for d in dims) else None


# --- ops that make many tensors -------------------------------------------------------


def _split(args: Sequence[Any], kwargs: dict[str, Any]) -> Any:
    splits = kwargs.get("num_or_size_splits", args[1] if len(args) > 1 else None)
    return kwargs.get("num") or splits


def _unstack(args: Sequence[Any], kwargs: dict[str, Any]) -> Any:
    if kwargs.get("num") is not None:
        return kwargs["num"]
    value = kwargs.get("value", args[0] if args else None)
    axis = kwargs.get("axis", args[2] if len(args) > 2 else 0)
    shape = getattr(value, "shape", None)
    try:
        return shape[axis] if shape is not None else None
    except (IndexError, TypeError, ValueError):
        return None  # TensorFlow reports the bad axis


#: How many tensors each many-output function makes, from its arguments.
_COUNTS: dict[str, Callable[[Sequence[Any], dict[str, Any]], Any]] = {
    "split": _split,
    "unstack": _unstack,
    "dynamic_partition": lambda a, k: k.get("num_partitions", a[2] if len(a) > 2 else None),
    "sparse.split": lambda a, k: k.get("num_split", a[1] if len(a) > 1 else None),
}


def check_outputs(target: str, args: Sequence[Any], kwargs: dict[str, Any]) -> None:
    """Refuse a call that would make more than ``MAX_OUTPUTS`` tensors, before making them.

    Raises:
        TooLarge: ``tf.<target>(*args, **kwargs)`` would make too many tensors.
    """
    count_of = _COUNTS.get(target)
    if count_of is None:
        return
    count = count_of(args, kwargs)
    if isinstance(count, (list, tuple)):
        count = len(count)
    count = getattr(count, "value", count)  # a Dimension in old TensorFlow shapes
    if isinstance(count, int) and not isinstance(count, bool) and count > MAX_OUTPUTS:
        raise TooLarge(f"would make {count} tensors, more than the {MAX_OUTPUTS} one op may make")
