"""What the trace knows about one loss, as the plain data a picture is drawn from."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from gradscope._src.engine import cuts as flow
from gradscope._src.results.facts import CutPoint


@dataclass
class Scene:
    """What the trace knows about one loss, as plain data (filled by ``picture_hook``)."""

    loss: str
    graph: flow.Graph
    names: list[str]  # per op, the TensorFlow op name
    variables: list[str]  # per variable index, its name
    handle_ops: dict[int, int]  # op index of a variable's handle -> variable index
    all_sets: list[int]  # per op, every variable with a forward path to it (bitset)
    mask: int  # the variables the loss differentiates
    reach: list[bool]  # per op, a forward path to the loss exists
    received: set[int]  # tensor ids that get a gradient from the loss
    cuts: list[flow.Cut]
    stop_ops: set[int]
    target_op: int
    locate: Callable[[int], tuple[str, str] | None]  # ``(node, "FILE:LINE")`` of an op
    visible: Callable[[int], bool]  # the op is one the user wrote, not a library's
    describe: Callable[[int], str | None] = lambda _op: None  # the op the user named, if any
    sparse: set[int] = field(default_factory=set)  # tensor ids with an IndexedSlices gradient
    #: The cut point reports give op ``i`` cut as ``kind`` (None: from ``locate``).
    cut_point: Callable[[int, str], CutPoint] | None = None
    #: Per op, the variables whose paths no earlier cut took (``flow.find_cuts``); None: unknown.
    live: list[int] | None = None
