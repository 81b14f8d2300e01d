"""What a fix is decided from (:class:`Evidence`, plain data), the op families the cases
tell apart, and the words every fix is written with."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from gradscope._src.results import words as wording
from gradscope._src.results.cut import CutPoint
from gradscope._src.results.facts import NanOrigin

#: Ops that pick an index: their result is an integer with no gradient.
ARGMAX = frozenset({"ArgMax", "ArgMin"})
#: Ops that round a floating value: TensorFlow gives them no gradient.
ROUNDING = frozenset({"Round", "Floor", "Ceil", "Rint"})
#: Ops that compare: their result is a boolean with no gradient.
COMPARISONS = frozenset(
    {
        "Greater",
        "GreaterEqual",
        "Less",
        "LessEqual",
        "Equal",
        "NotEqual",
        "ApproximateEqual",
        "IsNan",
        "IsInf",
        "IsFinite",
    }
)
#: The ``Identity`` a ``tf.custom_gradient`` puts on its results: a cut there is the
#: ``grad_fn`` returning None.
CUSTOM = frozenset({"Identity", "IdentityN"})
#: Where a NaN or an infinity is first made, by the fix that guards it.
NAN_LOG = frozenset({"Log", "Log1p", "Xlogy", "Digamma", "Lgamma"})
NAN_ROOT = frozenset({"Sqrt", "Rsqrt", "Pow", "Acos", "Asin", "Atanh"})
NAN_DIVIDE = frozenset({"RealDiv", "Div", "Reciprocal", "Inv", "FloorDiv", "Xdivy", "TruncateDiv"})
#: Words in a name that mark a target network (a deliberate ``stop_gradient``).
TARGET_WORDS = ("target",)


@dataclass(frozen=True)
class Evidence:
    """What a report knows about one variable (or source) that gets no usable gradient.

    Attributes:
        status: the pair's status (``none:stopped``, ``nan``, ...).
        variable: the variable's (or source's) name.
        cut_points: where its last paths were cut.
        note: the cause a front-end gave in words, when the cut points cannot say it.
        target: the loss, as a reader names it: ``loss `loss_1``` or ``the loss made at
            train.py:54``.
        site: where the gradient was asked for (``gradscope run``: the call's ``FILE:LINE``).
        api: how it was asked for (``GradientTape.gradient``, ``compute_gradients``, ...).
        reached_by: where else this variable does get a gradient (other losses or calls).
        reads: the variables the same loss (or call) does give a gradient.
        nan_origin: a ``nan`` pair's first non-finite value, when it was looked for.
        spec: the cut points are nodes of a YAML spec (the fix is written as spec fields).
    """

    status: str
    variable: str = ""
    cut_points: tuple[CutPoint, ...] = ()
    note: str = ""
    target: str = "the loss"
    site: str = ""
    api: str = ""
    reached_by: tuple[str, ...] = ()
    nan_origin: NanOrigin | None = None
    spec: bool = False
    trainable_changed: bool = False  # a ``trainable`` flag the traced Keras step ignores
    reads: tuple[str, ...] = ()  # the variables of the same call the loss does reach
    #: ``(variable, FILE:LINE)``: the program copies that variable's value into this one
    copy_of: tuple[str, str] = ("", "")


def at(c: CutPoint) -> str:
    return f"At {c.source}," if c.source else f"At `{c.node}`,"


def op(c: wording.Cut) -> str:
    return wording.cut_quoted(c, at=False)


def op_code(c: CutPoint) -> str:
    return "tf." + re.sub(r"(?<!^)(?=[A-Z])", "_", c.op).lower()


def then(later: Sequence[str]) -> str:
    if not later:
        return ""
    return f" (the path is cut again later, at {words(later)}: change those too)"


def also(more: Sequence[CutPoint]) -> str:
    if not more:
        return ""
    places = words([f"{c.op} at {c.source or c.node}" for c in more])
    return f" Other paths are cut too, at {places}."


def name(variable: str) -> str:
    return f"`{variable}`" if variable else "the variable"


def short(variable: str) -> str:
    return (variable.rpartition("@")[0] or variable).rsplit("/", 1)[-1] or "v"


def words(items: Sequence[str]) -> str:
    items = list(dict.fromkeys(items))
    if len(items) <= 1:
        return "".join(items)
    shown = items[:3]
    more = f" and {len(items) - 3} more" if len(items) > 3 else ""
    return ", ".join(shown[:-1]) + (" and " if not more else ", ") + shown[-1] + more


def target_network(e: Evidence, c: CutPoint) -> bool:
    """A ``stop_gradient`` in front of a target network's copy: by what the program does (it
    assigns the variable another variable's value, ``copy_of``), else by the names involved."""
    if e.copy_of[0]:
        return True
    names = (e.variable.lower(), c.node.lower())
    return any(word in name for word in TARGET_WORDS for name in names)
