"""The whole model's memory and work, from static shapes, before anything runs.

``limits.py`` holds each tensor to ``--max-elements``; this module adds what one tensor at a
time cannot see:

- **No strings and no file names.** A string tensor's size is not in its shape (``fill`` of a
  100 KB string 2**26 times), so a spec may make none but short constants TensorFlow's own
  functions carry (assertion messages, ``MAX_STRING_CONSTANT``); an op with a string
  attribute naming a file, path or directory is refused whatever made it (defence behind
  the reviewed op list).
- **Bytes.** Every forward tensor is kept for the backward pass, so their bytes add up: the
  sum over every op output (by dtype size, unknown sizes at their bound) and every variable
  is held to ``MAX_BYTES``.
- **Work.** Every op type has a cost class (``COST``): linear in its tensors' sizes unless
  reviewed otherwise (a matrix product, a convolution, a cubic decomposition, a quadratic
  non-max suppression). The forward work, counted once for the forward pass and twice more
  per loss for its backward pass, is held to ``MAX_WORK``.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

#: The most bytes a model's forward tensors and variables may take together (8 GiB).
MAX_BYTES = 8 * 2**30
#: The most work a run may take, in element operations (about 20 minutes on one slow core;
#: ResNet50 on 8 images with two losses is about 2 * 10**11).
MAX_WORK = 2 * 10**12
#: String attributes whose names say they name something outside the computation.
_FILE_ATTR = re.compile(r"file|path|dir|url|filename", re.IGNORECASE)


class TooLarge(ValueError):
    """A spec asked for a tensor larger than ``--max-elements`` (or for too many tensors);
    ``limits.TooLarge`` is the same class."""


@dataclass(frozen=True)
class Refusal:
    """The op that breaks a budget, and the message saying how."""

    op: Any
    message: str


def _dims(bound: Any) -> tuple[int, ...]:
    return tuple(bound.dims) if bound is not None and bound.dims is not None else ()


def _elements(bound: Any) -> int:
    return int(bound.size) if bound is not None else 1


def _matmul(op: Any, ins: Sequence[Any], out: int) -> int:
    dims = _dims(ins[0]) if ins else ()
    transposed = bool(_attr(op, "transpose_a") or _attr(op, "adj_x"))
    inner = (dims[-2] if transposed else dims[-1]) if len(dims) >= 2 else 1
    return out * max(inner, 1)


def _conv(op: Any, ins: Sequence[Any], out: int) -> int:
    # out * (kernel elements / output channels) for convolutions; for the backprop ops the
    # filter is an input too (the largest input other than the data stands for it).
    sizes = sorted((_dims(b) for b in ins), key=math.prod)
    kernel = sizes[-2] if len(sizes) >= 2 else ()
    channels = kernel[-1] if kernel else 1
    return out * max(math.prod(kernel) // max(channels, 1), 1)


def _cubic(op: Any, ins: Sequence[Any], out: int) -> int:
    dims = _dims(ins[0]) if ins else ()
    n = max(dims[-2:], default=1)
    batch = math.prod(dims[:-2])
    return batch * n**3 * 4


def _boxes_squared(op: Any, ins: Sequence[Any], out: int) -> int:
    dims = _dims(ins[0]) if ins else ()
    boxes = dims[-2] if len(dims) >= 2 else max(dims, default=1)
    if op.type == "NonMaxSuppressionWithOverlaps":
        boxes = dims[0] if dims else 1
    batch = math.prod(dims[:-2]) * (dims[-1] if op.type == "CombinedNonMaxSuppression" else 1)
    return max(batch, 1) * boxes * boxes


def _n_log_n(op: Any, ins: Sequence[Any], out: int) -> int:
    n = max((_elements(b) for b in ins), default=1)
    return n * max(math.ceil(math.log2(max(n, 2))), 1)


def _einsum(op: Any, ins: Sequence[Any], out: int) -> int:
    equation = _attr(op, "equation") or b""
    text = equation.decode() if isinstance(equation, bytes) else str(equation)
    inputs = text.split("->")[0].split(",")
    sizes: dict[str, int] = {}
    for labels, bound in zip(inputs, ins, strict=False):
        dims = _dims(bound)
        letters = [c for c in labels if c.isalpha()]
        for letter, size in zip(letters, dims[len(dims) - len(letters) :], strict=False):
            sizes[letter] = max(sizes.get(letter, 1), size)
    ellipsis = max((math.prod(_dims(b)) for b in ins), default=1) if "." in text else 1
    return max(math.prod(sizes.values()) * max(ellipsis // max(out, 1), 1), out)


def _attempts(op: Any, ins: Sequence[Any], out: int) -> int:
    # The kernel retries up to max_attempts times, each a few hundred nanoseconds.
    return max(int(_attr(op, "max_attempts") or 1), 1) * 1000


Cost = Callable[[Any, Sequence[Any], int], int]


def _types(text: str, cost: Cost) -> dict[str, Cost]:
    return dict.fromkeys(text.split(), cost)


#: Op types whose work is not linear in their tensors' sizes (reviewed); every other op
#: type costs the elements it reads and writes.
COST: dict[str, Cost] = {
    **_types("MatMul BatchMatMul BatchMatMulV2 BatchMatMulV3 SparseMatMul", _matmul),
    **_types(
        """Conv2D Conv3D Conv2DBackpropInput Conv2DBackpropFilter Conv3DBackpropInputV2
        Conv3DBackpropFilterV2 DepthwiseConv2dNative DepthwiseConv2dNativeBackpropInput
        DepthwiseConv2dNativeBackpropFilter Conv Dilation2D Erosion2D
        Conv2DBackpropInputV2 Conv2DBackpropFilterV2""",
        _conv,
    ),
    **_types(
        """Svd Qr SelfAdjointEigV2 Eig Cholesky MatrixInverse MatrixDeterminant
        LogMatrixDeterminant MatrixSolve MatrixSolveLs MatrixTriangularSolve Lu
        MatrixExponential MatrixLogarithm MatrixSquareRoot BandedTriangularSolve""",
        _cubic,
    ),
    **_types(
        """NonMaxSuppression NonMaxSuppressionV2 NonMaxSuppressionV3 NonMaxSuppressionV4
        NonMaxSuppressionV5 NonMaxSuppressionWithOverlaps CombinedNonMaxSuppression
        GenerateBoundingBoxProposals""",
        _boxes_squared,
    ),
    **_types(
        """TopKV2 TopK Unique UniqueV2 UniqueWithCounts UniqueWithCountsV2 FFT FFT2D FFT3D
        FFTND IFFT IFFT2D IFFT3D IFFTND RFFT RFFT2D RFFT3D RFFTND IRFFT IRFFT2D IRFFT3D
        IRFFTND ApproxTopK RandomShuffle""",
        _n_log_n,
    ),
    "Einsum": _einsum,
    **_types(
        """SampleDistortedBoundingBox SampleDistortedBoundingBoxV2
        StatelessSampleDistortedBoundingBox""",
        _attempts,
    ),
}


def _attr(op: Any, name: str) -> Any:
    try:
        return op.get_attr(name)
    except (ValueError, TypeError):
        return None


def check(
    ops: Iterable[Any], bounds: dict[str, Any], losses: int, base_bytes: int
) -> Refusal | None:
    """The first op (in creation order) that breaks a budget, or None.

    Args:
        ops: the traced forward graph's operations, in creation order.
        bounds: each output's size bound by tensor name (``limits.oversized(..., into=)``).
        losses: how many losses are differentiated (each adds a backward pass).
        base_bytes: the bytes of the spec's inputs and variables, made before tracing.
    """
    total_bytes, work = base_bytes, 0
    passes = 1 + 2 * max(losses, 1)
    for op in ops:
        refused = _content(op)
        if refused is not None:
            return Refusal(op, refused)
        ins = [bounds.get(t.name) for t in op.inputs]
        out = sum(_elements(bounds.get(t.name)) for t in op.outputs)
        total_bytes += sum(
            _elements(bounds.get(t.name)) * _itemsize(t) for t in op.outputs if not _shared(op)
        )
        if total_bytes > MAX_BYTES:
            return Refusal(op, _too_much("the model's tensors", total_bytes, MAX_BYTES, "bytes"))
        cost = COST.get(op.type)
        work += cost(op, ins, out) if cost else out + sum(_elements(b) for b in ins)
        if work * passes > MAX_WORK:
            return Refusal(op, _too_much("the model's work", work * passes, MAX_WORK, "operations"))
    return None


def init_work(init: Any, dims: Sequence[int]) -> int:
    """The work of filling a weight of shape ``dims`` with ``init`` (a name or initializer).

    Most initializers draw each element once; ``orthogonal`` takes a QR decomposition of
    the weight flattened to 2-D, cubic in its smaller side (an 8000 x 8000 one takes minutes).
    """
    name = init if isinstance(init, str) else type(init).__name__
    size = math.prod(dims)
    if name.lower() == "orthogonal" and len(dims) >= 2:
        rows, cols = math.prod(dims[:-1]), dims[-1]
        return rows * cols * min(rows, cols) * 4
    return size


def init_problem(init: Any, dims: Sequence[int]) -> str | None:
    """Why initializing a weight would take more than ``MAX_WORK``, or None."""
    work = init_work(init, dims)
    if work <= MAX_WORK:
        return None
    shape = "[" + ", ".join(map(str, dims)) + "]"
    return (
        f"initializing shape {shape} with orthogonal takes a QR decomposition of about "
        f"{work:.2g} operations, more than the {MAX_WORK:.0g} a spec may use"
    )


#: Attrs that give the shape of the tensor an op makes (``constant``, ``zeros``, ``fill``, ...).
_SHAPE_ATTRS = ("shape", "dims", "batch_shape")


def check_shape_attrs(attrs: dict[str, Any], limit: int) -> None:
    """Refuse a literal shape in attrs larger than ``limit`` elements, before calling TF.

    ``tf.constant(1.0, shape=[60000, 60000])`` spends half a minute in Python before the
    graph check sees its output; the literal tells the size at once.

    Raises:
        TooLarge: the shape has more than ``limit`` elements.
    """
    for key in _SHAPE_ATTRS:
        dims = attrs.get(key)
        if isinstance(dims, list) and all(isinstance(d, int) and d >= 0 for d in dims):
            count = math.prod(dims)
            if count > limit:
                shape = "[" + ", ".join(map(str, dims)) + "]"
                raise TooLarge(
                    f"would make a tensor of {count} elements (shape {shape}), "
                    f"more than --max-elements {limit}"
                )


def costliest(ops: Iterable[Any], bounds: dict[str, Any]) -> Any:
    """The op with the most work by its cost class (where a long run spends its time)."""
    best, most = None, -1
    for op in ops:
        ins = [bounds.get(t.name) for t in op.inputs]
        out = sum(_elements(bounds.get(t.name)) for t in op.outputs)
        cost = COST.get(op.type)
        work = cost(op, ins, out) if cost else out + sum(_elements(b) for b in ins)
        if work > most:
            best, most = op, work
    return best


#: The most bytes a string constant may hold: TensorFlow's own functions carry small message
#: constants for their assertions (``nn.compute_average_loss`` checks its batch size).
MAX_STRING_CONSTANT = 4096


def _content(op: Any) -> str | None:
    for tensor in op.outputs:
        if getattr(tensor.dtype, "name", "") == "string" and not _small_constant(op):
            return (
                "would make a string tensor, whose size gradscope cannot bound; "
                "a spec makes numbers only"
            )
    for name, value in op.node_def.attr.items():
        if value.s and _FILE_ATTR.search(name):
            return f"refused: its attribute {name!r} names a file or a place outside the model"
    return None


def _small_constant(op: Any) -> bool:
    """A ``Const`` whose strings are in the graph already, and short: its size is known."""
    if op.type != "Const":
        return False
    value = op.node_def.attr["value"].tensor
    return sum(len(s) for s in value.string_val) <= MAX_STRING_CONSTANT


def _shared(op: Any) -> bool:
    """Ops whose output is a view of an existing tensor or handle (no new memory)."""
    return op.type in ("Identity", "Reshape", "Squeeze", "ExpandDims", "ReadVariableOp",
                       "VarHandleOp", "Placeholder", "StopGradient")  # fmt: skip


def _itemsize(tensor: Any) -> int:
    size = getattr(tensor.dtype, "size", 4)
    return int(size) if size else 4


def _too_much(what: str, amount: int, limit: int, unit: str) -> str:
    if unit == "bytes":
        shown, most = f"{amount / 2**30:.1f} GiB", f"{limit / 2**30:.0f} GiB"
        why = "every forward tensor is kept for the backward pass"
    else:
        shown, most = f"{amount:.2g} operations", f"{limit:.0g}"
        why = "forward and backward passes"
    return (
        f"brings {what} to {shown} ({why}; estimated from static shapes before running), "
        f"more than the {most} a spec may use"
    )
