"""The registry of causes: why a gradient is missing, zero or NaN, each cause a class that owns
its id, the status it explains, its SARIF rule and help, its message and its fix.

Detection (the engine, the front-ends, a JAX door later) returns a :class:`Cause` with its
facts (the op, the line, the names), never a sentence: ``OutsideTape(line="train.py:9",
op="MatMul")``. The cause words its own message (``str(cause)``, the ``note`` of a source or a
pair in JSON) and builds its own :class:`~gradscope._src.results.fix.Fix` from the same facts
and the :class:`Context` of the pair it explains; nothing reads a message back to learn what
happened (checkify's errors own their message; ruff's ``Violation`` owns ``message()`` and
``fix_title()``; mypy's ``ErrorCode`` its description).

Adding a cause is one class here (``@registered``, with its facts as fields) and, where the
facts are not already at hand, the detection that makes it; a cut point's cause is found by
the op types it declares (``ops``), or by the id the engine gives the cut
(``CutPoint.cause``). The schemas' fix kinds and the docs' causes page are generated from
:data:`CAUSES` (``scripts/gen_causes.py``; ``tests/analysis/test_causes.py`` checks they are
current). Plain data and words: no TensorFlow, no rendering.
"""

from __future__ import annotations

import ast
import dataclasses
import linecache
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, ClassVar, TypeVar

from gradscope._src.location import Location
from gradscope._src.results import words as wording
from gradscope._src.results.cut import NONE_INPUT_NAMES, STOP_TYPES, CutPoint
from gradscope._src.results.fix import INTENDED, Fix
from gradscope._src.results.status import Status

# -- what a fix is built from besides the cause ------------------------------------------------


@dataclass(frozen=True)
class Context:
    """What a report knows about the variable (or source) a cause explains: what its fix is
    built from besides the cause's own facts.

    Attributes:
        status: the pair's status (``none:stopped``, ``nan``, ...).
        variable: the variable's (or source's) name.
        cut_points: where its last paths were cut (the first is the cause's; the others are
            named as further cuts).
        target: the loss, as a reader names it: ``loss `loss_1``` or ``the loss made at
            train.py:54``.
        site: where the gradient was asked for (``gradscope run``: the call's ``FILE:LINE``).
        api: how it was asked for (``GradientTape.gradient``, ``compute_gradients``, ...).
        reached_by: where else this variable does get a gradient (other losses or calls).
        nan_origin: a ``nan`` pair's first non-finite value, when it was looked for.
        spec: the cut points are nodes of a YAML spec (the fix is written as spec fields).
        reads: the variables the same loss (or call) does give a gradient.
        copy_of: ``(variable, FILE:LINE)``: the program copies that variable's value into
            this one (a target network's copy).
        cause: what the front-end found, when the cut points cannot say it.
    """

    status: str
    variable: str = ""
    cut_points: tuple[CutPoint, ...] = ()
    target: str = "the loss"
    site: str = ""
    api: str = ""
    reached_by: tuple[str, ...] = ()
    nan_origin: wording.Origin | None = None
    spec: bool = False
    reads: tuple[str, ...] = ()
    copy_of: tuple[str, str] = ("", "")
    cause: Cause | None = None


# -- the base class and the registry -----------------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class Cause:
    """Why: a cause's kind (its class) and its facts.

    Class attributes (the registry's entry): ``id`` (what JSON and SARIF name it by),
    ``status`` (the status it explains), ``rule`` (its SARIF name), ``title`` (its heading
    in the docs), ``help`` (what it means for training and what to change), ``fixes`` (the fix
    kinds it gives; none: the pair's status decides the fix), ``first`` (its fix is given
    whatever the pair's status: a ``trainable`` flag the traced step ignores).

    Attributes:
        line: the user's ``FILE:LINE`` where it happened ("" when unknown).
        op: the op type there (``MatMul``, ``ArgMax``).
        names: the names involved (outputs, variables, arrays), each once.
        also: causes said after this one (where a path without a line then ends).
    """

    id: ClassVar[str] = ""
    status: ClassVar[str] = ""
    rule: ClassVar[str] = ""
    title: ClassVar[str] = ""
    help: ClassVar[str] = ""
    fixes: ClassVar[tuple[str, ...]] = ()
    first: ClassVar[bool] = False

    line: str = ""
    op: str = ""
    names: tuple[str, ...] = ()
    also: tuple[Cause, ...] = ()

    def message(self) -> str:
        """Why, in one clause (its ``note``)."""
        return self.help

    def after(self) -> str:
        """The clause when said after another cause (``its last path ends at ...``)."""
        return self.message()

    def fix(self, c: Context) -> Fix | None:
        """What to change so the gradient flows, at the user's own line (None: the pair's
        status decides, ``analysis/fixes``)."""
        return None

    def __str__(self) -> str:
        """The message, then what is said after it."""
        return "; ".join([self.message(), *(a.after() for a in self.also)])

    def then(self, more: Cause) -> Cause:
        """This cause with ``more`` said after it."""
        return dataclasses.replace(self, also=(*self.also, more))

    def to_dict(self) -> dict[str, Any]:
        """The cause in JSON: its id and the facts it has."""
        out: dict[str, Any] = {"id": self.id}
        for f in dataclasses.fields(self):
            value = getattr(self, f.name)
            if f.name == "also":
                if value:
                    out["also"] = [c.to_dict() for c in value]
            elif isinstance(value, tuple) and value and isinstance(value[0], CutPoint):
                out[f.name] = [c.to_dict() for c in value]
            elif value not in ("", (), None, False):
                out[f.name] = list(value) if isinstance(value, tuple) else value
        return out


#: Every cause, by id, in the order the docs list them.
CAUSES: dict[str, type[Cause]] = {}

C = TypeVar("C", bound=type[Cause])


def registered(cls: C) -> C:
    """Put a cause's class in the registry (its id once)."""
    if not cls.id or cls.id in CAUSES:
        raise ValueError(f"cause id {cls.id!r} is empty or taken")
    CAUSES[cls.id] = cls
    return cls


def fix_kinds() -> tuple[str, ...]:
    """Every fix kind a cause gives, each once, in the registry's order (the schemas' list)."""
    return tuple(dict.fromkeys(k for cls in CAUSES.values() for k in cls.fixes))


# -- words every fix is written with -----------------------------------------------------------


def name(variable: str) -> str:
    return f"`{variable}`" if variable else "the variable"


def short(variable: str) -> str:
    return (variable.rpartition("@")[0] or variable).rsplit("/", 1)[-1] or "v"


def listed(items: Sequence[str]) -> str:
    """Items in a sentence, each once, at most three and a count: ``a, b, c and 9 more``."""
    items = list(dict.fromkeys(items))
    if len(items) <= 1:
        return "".join(items)
    shown = items[:3]
    more = f" and {len(items) - 3} more" if len(items) > 3 else ""
    return ", ".join(shown[:-1]) + (" and " if not more else ", ") + shown[-1] + more


def _at(line: str, node: str) -> str:
    return f"At {line}," if line else f"At `{node}`,"


def _then(later: Sequence[str]) -> str:
    if not later:
        return ""
    return f" (the path is cut again later, at {listed(later)}: change those too)"


def _more(more: Sequence[CutPoint]) -> str:
    if not more:
        return ""
    places = listed([f"{c.op} at {c.source or c.node}" for c in more])
    return f" Other paths are cut too, at {places}."


#: The most names a fix lists of the variables a loss reads: the rest are counted, so a fix
#: stays one sentence however many variables the model has (issue 42.12).
SHOWN = 3


def reads_list(reads: Sequence[str], what: str = "variables the loss reads") -> str:
    """The variables a loss reads, as a fix names them: ``[a, b]``, or past ``SHOWN``, ``the
    9900 variables the loss reads (`a`, `b`, `c` and 9897 more)``."""
    if len(reads) <= SHOWN:
        return f"[{', '.join(reads)}]"
    return f"the {len(reads)} {what} ({listed([f'`{r}`' for r in reads])})"


# -- a cut point: the op that cut the last paths names the cause and its line -----------------


@dataclass(frozen=True, kw_only=True)
class CutCause(Cause):
    """A cut point's cause: ``line`` the cut's ``FILE:LINE``, ``op`` its op type.

    Class attribute ``ops``: the op types it stands for (none: it is found by the id the
    engine gives the cut, ``CutPoint.cause``); ``kind``: the cut's kind.

    Attributes:
        node: the cut's node (a spec node, the TensorFlow op's name).
        later: further places on the same path that lose the gradient again.
    """

    ops: ClassVar[frozenset[str]] = frozenset()
    kind: ClassVar[str] = "nondifferentiable"

    node: str = ""
    later: tuple[str, ...] = ()

    @classmethod
    def matches(cls, cut: CutPoint) -> bool:
        """Whether a cut point stands for this cause (by its op, or the engine's id)."""
        return cut.cause == cls.id or (cut.kind == cls.kind and cut.op in cls.ops)

    def message(self) -> str:
        return wording.cut_text(self)

    @property
    def source(self) -> str:  # a cut point's words read ``source`` (``words.Cut``)
        return self.line

    def at(self) -> str:
        return _at(self.line, self.node)

    def op_quoted(self) -> str:
        return wording.cut_quoted(self, at=False)


def of_cut(cut: CutPoint) -> CutCause:
    """The cause a cut point stands for: the first registered cut cause that matches it (an
    op with no gradient nothing more specific names: ``no-gradient-op``)."""
    kinds = [cls for cls in CAUSES.values() if issubclass(cls, CutCause)]
    found = next((k for k in kinds if k.matches(cut)), None)
    if found is None:
        found = StopGradientsArgument if cut.kind == "stopped" else NoGradientOp
    return found(line=cut.source, op=cut.op, node=cut.node, later=cut.later)


@registered
@dataclass(frozen=True, kw_only=True)
class StopGradient(CutCause):
    id = "stop-gradient"
    status = Status.STOPPED
    rule = "StopGradientOnEveryPath"
    title = "`stop_gradient` on every path"
    help = (
        "Every path from the variable to the loss crosses tf.stop_gradient: the loss treats "
        "the value as a constant. Remove it if the variable should learn from this loss; a "
        "target network's copy or a straight-through estimator is intended."
    )
    fixes = ("remove-stop-gradient", INTENDED)
    ops = STOP_TYPES
    kind = "stopped"

    def fix(self, c: Context) -> Fix:
        more = _more(c.cut_points[1:])
        if c.status in ("ok", "zero"):  # one path cut, the gradient flows along another
            return Fix(
                INTENDED,
                self.line,
                f"{self.at()} `stop_gradient` cuts one path while the gradient of "
                f"{name(c.variable)} flows along another (a straight-through estimator, "
                "`x + tf.stop_gradient(f(x) - x)`): intended, nothing to change.",
            )
        if _target_network(c, self.node):
            copied, where = c.copy_of
            what = (
                f"a copy of `{copied}` (assigned{f' at {where}' if where else ''}), as a "
                "target network's copy should be"
                if copied
                else "as a target network's copy should be"
            )
            return Fix(
                INTENDED,
                self.line,
                f"{self.at()} `stop_gradient` keeps {name(c.variable)} out of {c.target}'s "
                f"gradient, {what}: nothing to change (allow it: `--allow-none`, or "
                "`expect.<loss>.none`).",
            )
        how = (
            f"have the nodes that read `{self.node}` read its input"
            if c.spec
            else "use its argument (`tf.stop_gradient(h) @ w2` becomes `h @ w2`)"
        )
        allow = (
            "list it under `expect.<loss>.none`"
            if c.spec
            else "allow it (`--allow-none` for `gradscope run`, `expect` for a target)"
        )
        return Fix(
            "remove-stop-gradient",
            self.line,
            f"{self.at()} `stop_gradient` cuts every path from {name(c.variable)} to "
            f"{c.target}: to train it from {c.target}, {how}; if the cut is meant (a target "
            f"network, a frozen feature extractor), {allow}.{more}",
        )


#: Words in a name that mark a target network (a deliberate ``stop_gradient``).
TARGET_WORDS = ("target",)


def _target_network(c: Context, node: str) -> bool:
    """A ``stop_gradient`` in front of a target network's copy: by what the program does (it
    assigns the variable another variable's value, ``copy_of``), else by the names involved."""
    if c.copy_of[0]:
        return True
    names = (c.variable.lower(), node.lower())
    return any(word in n for word in TARGET_WORDS for n in names)


@registered
@dataclass(frozen=True, kw_only=True)
class StopGradientsArgument(CutCause):
    id = "stop-gradients-argument"
    status = Status.STOPPED
    rule = "StopGradientsArgument"
    title = "A tensor named in the gradient call's `stop_gradients`"
    help = (
        "The gradient call (tf.gradients(stop_gradients=...), a spec loss's "
        "stop_gradients) treats the tensor as a constant, so no gradient passes it."
    )
    fixes = ("stop-gradients-argument",)
    kind = "stopped"

    @classmethod
    def matches(cls, cut: CutPoint) -> bool:
        return cut.cause == cls.id or (cut.kind == "stopped" and cut.op not in STOP_TYPES)

    def fix(self, c: Context) -> Fix:
        return Fix(
            "stop-gradients-argument",
            self.line,
            f"{self.at()} `{self.node}` is named in the gradient call's `stop_gradients`, so it "
            f"is a constant to {c.target}: take it out of `stop_gradients` if "
            f"{name(c.variable)} should learn from it.{_more(c.cut_points[1:])}",
        )


@registered
@dataclass(frozen=True, kw_only=True)
class Assign(CutCause):
    id = "assign"
    status = Status.ASSIGN
    rule = "CopiedWithAssign"
    title = "`Variable.assign` in the forward pass"
    help = (
        "The variable reaches the loss only by being copied into another variable with "
        "assign; TensorFlow passes no gradient through an assignment."
    )
    fixes = ("assign-as-tensor",)
    kind = "assign"

    @classmethod
    def matches(cls, cut: CutPoint) -> bool:
        return cut.cause == cls.id or cut.kind == "assign"

    def fix(self, c: Context) -> Fix:
        more = _more(c.cut_points[1:])
        if c.spec:
            text = (
                f"{self.at()} `{self.node}` copies {name(c.variable)} into another variable, "
                "and TensorFlow passes no gradient through an assignment: compute the "
                "variable's new value as a tensor and read that downstream, `x * (1 - "
                "pad(ones_like(patch))) + pad(patch)` (nodes `op: pad` with the slice's "
                f"`paddings`, `op: multiply`, `op: add`), which holds the values the assign "
                f"writes.{more}"
            )
        elif self.op and "Slice" not in self.op and "Scatter" not in self.op:
            # a whole variable written (``w.assign(w_pred)``: a hypernetwork's predicted
            # weights): what is copied is the tensor made from the variable, not the variable
            text = (
                f"{self.at()} `assign` writes a tensor made from {name(c.variable)} into "
                "another variable, and TensorFlow passes no gradient through an assignment: "
                "use that tensor itself in the forward pass where the variable is read (`y = "
                "x @ w_pred` for `w.assign(w_pred); y = x @ w`, as a hypernetwork's "
                "predicted weights need; keep the assign too if later steps read the "
                f"variable).{more}"
            )
        else:
            text = (
                f"{self.at()} `assign` copies {name(c.variable)}'s value into a variable, and "
                "TensorFlow passes no gradient through an assignment: compute the new value "
                "as a tensor and use it downstream, `mask = tf.pad(tf.ones_like(patch), "
                "paddings); x_new = x * (1 - mask) + tf.pad(patch, paddings)` for `x[:2, "
                ":2].assign(patch)` (the same values the assign writes; keep the assign too if "
                f"later steps read `x`).{more}"
            )
        return Fix("assign-as-tensor", self.line, text)


@registered
@dataclass(frozen=True, kw_only=True)
class Sample(CutCause):
    """A value sampled from a distribution whose parameters the variables are: the sample (an
    index, a 0/1) carries no gradient back to them. A categorical sample is its op
    (``Multinomial``); a Bernoulli one, a comparison with a uniform draw, is named by the
    engine (``engine/cuts.py``, ``CAUSE_RULES``)."""

    id = "sample"
    status = Status.NONDIFFERENTIABLE
    rule = "SampleWithoutReparameterisation"
    title = "A sample without reparameterisation in the loss path"
    help = (
        "tf.random.categorical, a Bernoulli draw (tf.cast(tf.random.uniform(...) < p)) or a "
        "multinomial returns a sample, which carries no gradient to the distribution's "
        "parameters: add the score-function (REINFORCE) term, or draw a reparameterised "
        "sample (a straight-through Gumbel-softmax)."
    )
    fixes = ("score-function",)
    ops = frozenset({"Multinomial", "StatelessMultinomial"})

    def fix(self, c: Context) -> Fix:
        if self.op in self.ops:
            logp = (
                "`logp = tf.reduce_sum(tf.one_hot(sample, depth) * tf.nn.log_softmax(logits), -1)`"
            )
        else:
            logp = "`logp = b * tf.math.log(p) + (1 - b) * tf.math.log(1 - p)` for the 0/1 `b`"
        drawn = (
            "`tf.random.categorical` draws a sample"
            if self.op in self.ops
            else f"a comparison with a uniform draw ({self.op}) draws a 0/1 sample"
        )
        return Fix(
            "score-function",
            self.line,
            f"{self.at()} {drawn}, which carries no gradient to the parameters it is drawn "
            f"with{_then(self.later)}: add the score-function term, "
            f"which keeps the loss's value and gives it the gradient of its expectation: "
            f"{logp}; `surrogate = tf.reduce_mean(tf.stop_gradient(per_sample_loss) * logp)` "
            "(reduced as the loss is; subtract a baseline from `per_sample_loss` to lower the "
            "variance); `loss = loss + (surrogate - tf.stop_gradient(surrogate))`. A "
            "reparameterised sample (a straight-through Gumbel-softmax) trains too, but draws "
            f"other values.{_more(c.cut_points[1:])}",
            (),
            self.later,
        )


#: Ops that pick an index: their result is an integer with no gradient.
ARGMAX = frozenset({"ArgMax", "ArgMin"})


@registered
@dataclass(frozen=True, kw_only=True)
class ArgMax(CutCause):
    id = "argmax"
    status = Status.NONDIFFERENTIABLE
    rule = "ArgMaxIndices"
    title = "`argmax` (or its indices cast, or one-hot encoded)"
    help = (
        "tf.argmax returns integer indices, which carry no gradient; casting them back to "
        "float, or one_hot of them, does not bring it back."
    )
    fixes = ("soft-argmax",)
    ops = ARGMAX

    def fix(self, c: Context) -> Fix:
        more = _more(c.cut_points[1:])
        if c.spec:
            text = (
                f"{self.at()} `{self.node}` (argmax) gives integer indices, which carry no "
                "gradient: keep its value and pass the softmax's gradient straight through, "
                "`probs + stop_gradient(one_hot(argmax(logits), depth) - probs)` (nodes `op: "
                "nn.softmax`, `op: one_hot`, `op: subtract`, `op: stop_gradient`, `op: add`), "
                f"whose value is the one-hot of the same index.{more}"
            )
        else:
            text = (
                f"{self.at()} `tf.argmax` gives integer indices, which carry no gradient"
                f"{_then(self.later)}: keep the value and pass the softmax's gradient straight "
                "through, `probs = tf.nn.softmax(logits); hard = probs + tf.stop_gradient("
                "tf.one_hot(tf.argmax(logits, -1), depth) - probs)` (the one-hot of the same "
                "index; the index itself is `tf.reduce_sum(hard * tf.range(depth, "
                "dtype=hard.dtype), -1)`). The probabilities themselves, or a Gumbel-softmax "
                f"sample, train too but change the values the loss reads.{more}"
            )
        return Fix("soft-argmax", self.line, text, (), self.later)


#: What each rounding op computes, as the TensorFlow call that computes the same (``Round``
#: rounds half to even, as ``tf.round`` does; a ``Cast`` to an integer truncates toward 0).
ROUNDING_CALLS = {
    "Round": "tf.round(x)",
    "Floor": "tf.floor(x)",
    "Ceil": "tf.math.ceil(x)",
    "Rint": "tf.math.rint(x)",
    "Cast": "tf.cast(tf.cast(x, tf.int32), x.dtype)",
}


@registered
@dataclass(frozen=True, kw_only=True)
class Rounding(CutCause):
    id = "rounding"
    status = Status.NONDIFFERENTIABLE
    rule = "RoundingOrIntegerCast"
    title = "`round`, `floor`, `ceil`, or a cast to an integer type"
    help = (
        "TensorFlow gives rounding ops no gradient, and an integer carries none: a float "
        "cast to int32 is cut there."
    )
    fixes = ("straight-through",)
    ops = frozenset(ROUNDING_CALLS)

    def fix(self, c: Context) -> Fix:
        more = _more(c.cut_points[1:])
        same = ROUNDING_CALLS.get(self.op, f"{_op_code(self.op)}(x)")
        what = "a cast to an integer type" if self.op == "Cast" else f"`{same.removesuffix('(x)')}`"
        dtype = (
            " (with the integer dtype your cast names: the cast truncates toward 0, and so "
            "does this)"
            if self.op == "Cast"
            else ""
        )
        if c.spec:
            text = (
                f"{self.at()} `{self.node}` ({what}) has no gradient: keep its value and pass "
                f"the gradient straight through, `x + stop_gradient({same.replace('tf.', '')} "
                f"- x)`{dtype}, as nodes (`op: subtract`, `op: stop_gradient`, `op: add`)."
                f"{more}"
            )
        else:
            text = (
                f"{self.at()} {what} has no gradient{_then(self.later)}: keep its value and "
                f"pass the gradient straight through with `x + tf.stop_gradient({same} - x)`"
                f"{dtype}, a float with the same values.{more}"
            )
        return Fix("straight-through", self.line, text, (), self.later)


def _op_code(op: str) -> str:
    return "tf." + re.sub(r"(?<!^)(?=[A-Z])", "_", op).lower()


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


@registered
@dataclass(frozen=True, kw_only=True)
class Comparison(CutCause):
    id = "comparison"
    status = Status.NONDIFFERENTIABLE
    rule = "ComparisonAsValue"
    title = "A comparison used as a value"
    help = "A comparison gives a boolean, which carries no gradient (tf.cast(h > 0.5, ...))."
    fixes = ("soft-comparison",)
    ops = COMPARISONS

    def fix(self, c: Context) -> Fix:
        text = (
            f"{self.at()} {self.op_quoted()} gives a boolean, which carries no gradient"
            f"{_then(self.later)}: keep its value and pass a smooth stand-in's gradient "
            "straight through, `soft = tf.sigmoid((a - b) / temperature); mask = soft + "
            "tf.stop_gradient(tf.cast(a > b, soft.dtype) - soft)` for `a > b` (the stand-in "
            f"alone, `soft`, trains too but changes the values the loss reads)."
            f"{_more(c.cut_points[1:])}"
        )
        return Fix("soft-comparison", self.line, text, (), self.later)


@registered
@dataclass(frozen=True, kw_only=True)
class NoneInput(CutCause):
    id = "none-input"
    status = Status.NONDIFFERENTIABLE
    rule = "InputWithoutGradient"
    title = "An input its op's gradient skips (a batch norm's `mean`, `tf.pad`'s value)"
    help = (
        "The op passes gradient to some inputs and not to this one: a fused batch norm's "
        "mean and variance, tf.pad's constant_values, betainc's a and b."
    )
    fixes = ("differentiable-op", "no-gradient-op")
    ops = frozenset(NONE_INPUT_NAMES)

    def fix(self, c: Context) -> Fix:
        more = _more(c.cut_points[1:])
        later = self.later
        given = " and ".join(f"`{n}`" for n in NONE_INPUT_NAMES[self.op].values())
        if self.op.startswith("FusedBatchNorm"):
            text = (
                f"{self.at()} the fused batch norm ({self.op}) gives its {given} no gradient "
                f"in TensorFlow{_then(later)}: to learn them, normalize with differentiable "
                "ops, `tf.nn.batch_normalization(x, mean, variance, offset, scale, "
                f"variance_epsilon)`, which computes the same normalization.{more}"
            )
            return Fix("differentiable-op", self.line, text, (), later)
        if self.op == "PadV2":
            text = (
                f"{self.at()} `tf.pad` (PadV2) gives its {given} no gradient in TensorFlow"
                f"{_then(later)}: pad with zeros and add the value through a constant mask, "
                "`tf.pad(x, paddings) + c * tf.pad(tf.zeros_like(x), paddings, "
                f"constant_values=1)`, which gives the same values and `c` its gradient.{more}"
            )
            return Fix("differentiable-op", self.line, text, (), later)
        cut = f"{self.at()} {self.op_quoted()} gives its {given} no gradient in TensorFlow"
        candidates = ["a differentiable op that computes the same value"]
        if self.op.startswith("QuantizeAndDequantize"):
            candidates.append("`tf.quantization.fake_quant_with_min_max_vars(x, min, max)`, "
                              "whose gradient reaches `min` and `max`")  # fmt: skip
        text = (
            f"{cut}{_then(later)}, and every path from {name(c.variable)} to {c.target} "
            f"enters it there.{more} The evidence does not single out a replacement."
        )
        return Fix("no-gradient-op", self.line, text, tuple(candidates), later)


#: The ``Identity`` a ``tf.custom_gradient`` puts on its results: a cut there is the
#: ``grad_fn`` returning None.
CUSTOM = frozenset({"Identity", "IdentityN"})


@registered
@dataclass(frozen=True, kw_only=True)
class CustomGradient(CutCause):
    id = "custom-gradient"
    status = Status.NONDIFFERENTIABLE
    rule = "CustomGradientReturnsNone"
    title = "A `tf.custom_gradient` whose `grad_fn` returns None for variables"
    help = (
        "The second list grad_fn returns holds one gradient per variable the function reads; "
        "None there means no gradient for that variable."
    )
    fixes = ("custom-gradient",)
    ops = CUSTOM

    def fix(self, c: Context) -> Fix | None:
        if c.spec:
            return NoGradientOp(line=self.line, op=self.op, node=self.node, later=self.later).fix(c)
        return Fix(
            "custom-gradient",
            self.line,
            f"{self.at()} the `grad_fn` of `{self.node.split('.')[0]}` returns None for "
            f"{name(c.variable)}: return its gradient in the second list, one entry per "
            "variable in `variables` (`return dy * w, [tf.reduce_sum(dy * x)]`), or "
            f"`tf.zeros_like(v)` for a variable it means to leave alone."
            f"{_more(c.cut_points[1:])}",
        )


#: The ops of ``tf.numpy_function`` and ``tf.py_function`` (and TensorFlow 1's ``tf.py_func``).
PY_FUNC_TYPES = frozenset({"PyFunc", "PyFuncStateless", "EagerPyFunc"})


@registered
@dataclass(frozen=True, kw_only=True)
class NumpyFunction(CutCause):
    """A value made by Python inside ``tf.numpy_function`` (or ``tf.py_function``): the
    cut's ``line`` calls it."""

    id = "numpy-function"
    status = Status.NONDIFFERENTIABLE
    rule = "NumpyFunctionOnPath"
    title = "`tf.numpy_function` (or `tf.py_function`) on every path"
    help = (
        "The value is computed by Python outside TensorFlow's graph: TensorFlow gives "
        "tf.numpy_function no gradient (and a model called inside it is invisible to the tape)."
    )
    fixes = ("keep-tensorflow-ops",)
    ops = PY_FUNC_TYPES

    #: the source has no path at all, and the loss reads the function's output (the source
    #: is read inside the function, or not at all)
    feeds: bool = False

    def message(self) -> str:
        if not self.feeds:
            return super().message()
        called = self._function()
        return (
            f"the loss is computed from what {self._api()} returns at {self.line}"
            f"{f' ({called})' if called else ''}: Python run outside TensorFlow's graph, so a "
            "variable read in there (a model called inside it) is invisible to the tape"
        )

    def _api(self) -> str:
        return "tf.py_function" if self.op == "EagerPyFunc" else "tf.numpy_function"

    def _function(self) -> str:
        """The Python function the line hands over (``np_play``), read from the line."""
        place = Location.parse(self.line)
        text = linecache.getline(place.file, place.line) if place is not None else ""
        found = re.search(r"(?:numpy_function|py_function|py_func)\(\s*(?:func\s*=\s*)?"
                          r"([A-Za-z_][\w.]*)", text)  # fmt: skip
        return found.group(1) if found else ""

    def fix(self, c: Context) -> Fix:
        called = self._function()
        what = f"`{called}` runs" if called else "the function runs"
        return Fix(
            "keep-tensorflow-ops",
            self.line,
            f"{self.at()} {what} in Python through `{self._api()}`, outside TensorFlow's "
            f"graph: TensorFlow gives it no gradient, so nothing {name(c.variable)} feeds "
            "into it reaches the loss (and a model called inside it is invisible to the "
            "tape). Compute what the loss needs with TensorFlow ops on the tensors, inside the "
            "tape (`logits = model(states)`, not `tf.numpy_function(play, [states], ...)`); "
            "keep the Python function for values that need no gradient (an environment's "
            f"step).{_more(c.cut_points[1:])}",
            later=self.later,
        )


@registered
@dataclass(frozen=True, kw_only=True)
class NoGradientOp(CutCause):
    id = "no-gradient-op"
    status = Status.NONDIFFERENTIABLE
    rule = "OpWithoutGradient"
    title = "Another op with no gradient"
    help = "TensorFlow registers no gradient for the op, and every path crosses it."
    fixes = ("no-gradient-op",)

    def fix(self, c: Context) -> Fix:
        return Fix(
            "no-gradient-op",
            self.line,
            f"{self.at()} {self.op_quoted()} has no gradient in TensorFlow, and every path from "
            f"{name(c.variable)} to {c.target} crosses it.{_more(c.cut_points[1:])} The "
            "evidence does not single out a replacement.",
            (
                "a differentiable op that computes the same value",
                f"`x + tf.stop_gradient({_op_code(self.op)}(x) - x)` to keep its value and pass "
                "the gradient straight through",
            ),
            self.later,
        )


# -- why a watched call's source has no path (``gradscope run``, ``watch()``) ------------------


@registered
@dataclass(frozen=True, kw_only=True)
class OutsideTape(Cause):
    """``line``, ``op``: the last op on the source's paths the tape did not record."""

    id = "outside-tape"
    status = Status.DISCONNECTED
    rule = "ComputedOutsideTheTape"
    title = "The forward pass runs outside the tape"
    help = (
        "A GradientTape sees only the operations run inside its with block; a value computed "
        "before it (or under stop_recording) is a constant to it."
    )
    fixes = ("move-into-tape",)

    #: where the tape first reads that value (a recorded op), when known
    read_at: str = ""

    def message(self) -> str:
        read = f"; the tape reads its value at {self.read_at}" if self.read_at else ""
        return (
            f"used only through {self.line or 'an unknown line'} ({self.op}), run while the "
            f"tape was not recording{read}"
        )

    def fix(self, c: Context) -> Fix:
        read = f" (at {self.read_at} it reads a value made before)" if self.read_at else ""
        return Fix(
            "move-into-tape",
            self.line,
            f"{self.line} runs while the tape is not recording, so the tape never sees "
            f"{name(c.variable)} used: move that line inside the `with tf.GradientTape() as "
            f"tape:` block whose loss reads it{read}, or compute the value again inside it (a "
            "GAN's `fake = generator(z)` goes under the generator's tape).",
        )


@registered
@dataclass(frozen=True, kw_only=True)
class LeftTensorFlow(Cause):
    """``line``: where the value left TensorFlow; ``how``: by what (``.numpy()``,
    ``float()``); ``back``: where it came back as a constant, when a buffer read took it
    (``np.asarray``) and no method call was seen; ``names``: the NumPy functions that line
    calls (``clip``), which the fix's example replaces."""

    id = "left-tensorflow"
    status = Status.DISCONNECTED
    rule = "ValueLeftTensorFlow"
    title = "A NumPy round trip inside the tape"
    help = (
        "The value left TensorFlow (.numpy(), np.*, float()) and what came back is a new "
        "constant the tape cannot trace to the variable."
    )
    fixes = ("keep-tensorflow-ops",)

    how: str = ""
    back: str = ""

    def message(self) -> str:
        if self.back:
            return (
                f"its value left TensorFlow at {self.line} ({self.op}, through np.asarray or "
                f"np.array) and came back as a new constant at {self.back}, which the tape "
                "cannot trace to it"
            )
        return (
            f"its value left TensorFlow at {self.line} ({self.how}): what came back is a new "
            "constant the tape cannot trace to it"
        )

    def fix(self, c: Context) -> Fix:
        return Fix(
            "keep-tensorflow-ops",
            self.line,
            f"At {self.line} the value leaves TensorFlow (`.numpy()`, `np.*`, `float()`), and "
            f"what comes back is a new constant: keep TensorFlow ops there ({self._example()}).",
        )

    def _example(self) -> str:
        """The TensorFlow op for the NumPy function the line calls (``tf.clip_by_value(h,
        lo, hi)`` for ``np.clip(h.numpy(), lo, hi)``); ``np.tanh`` when none is known."""
        for called in self.names:
            tf_op = NUMPY_TO_TF.get(called)
            if tf_op is not None:
                args = ", lo, hi" if called == "clip" else ""
                return f"`{tf_op}(h{args})` for `np.{called}(h.numpy(){args})`"
        if self.names:
            return f"the `tf.` op for `np.{self.names[0]}(...)`, on the tensor itself"
        return "`tf.math.tanh(h)` for `np.tanh(h.numpy())`"


#: The TensorFlow op of a NumPy function, for a round trip's fix.
NUMPY_TO_TF = {
    "abs": "tf.abs", "clip": "tf.clip_by_value", "cos": "tf.cos", "exp": "tf.exp",
    "log": "tf.math.log", "log1p": "tf.math.log1p", "max": "tf.reduce_max",
    "maximum": "tf.maximum", "mean": "tf.reduce_mean", "min": "tf.reduce_min",
    "minimum": "tf.minimum", "power": "tf.pow", "sigmoid": "tf.sigmoid", "sin": "tf.sin",
    "sqrt": "tf.sqrt", "square": "tf.square", "sum": "tf.reduce_sum", "tanh": "tf.math.tanh",
    "where": "tf.where", "matmul": "tf.matmul", "std": "tf.math.reduce_std",
    "var": "tf.math.reduce_variance", "reshape": "tf.reshape", "transpose": "tf.transpose",
    "concatenate": "tf.concat", "stack": "tf.stack", "einsum": "tf.einsum",
}  # fmt: skip


@registered
@dataclass(frozen=True, kw_only=True)
class PathEnds(Cause):
    """``line``, ``op``: the last value made from the source, which nothing the target is
    made from reads."""

    id = "path-ends"
    status = Status.DISCONNECTED
    rule = "PathEndsUnread"
    title = "A value computed, then read by nothing the loss is made from"
    help = (
        "A value made from the variable is computed, then nothing the loss is made from reads "
        "it (a layer's output call() does not return, a TensorArray write dropped)."
    )

    def after(self) -> str:
        return f"its last path ends at {self.line or 'an unknown line'} ({self.op})"

    def message(self) -> str:
        return (
            f"{self.after()}: that value is computed, then nothing the target is made from reads it"
        )


@registered
@dataclass(frozen=True, kw_only=True)
class NeverRead(Cause):
    """``ends``: the last ops the source's value reaches instead of the loss."""

    id = "never-read"
    status = Status.DISCONNECTED
    rule = "LossNeverReadsIt"
    title = "The loss never reads the variable"
    help = "Nothing the loss is made from reads the variable's value; it feeds other ops only."

    ends: tuple[CutPoint, ...] = ()
    #: the loss is the model's added losses (its regularizers and ``add_loss`` terms: a Keras
    #: train step's part, the Monitor's), none of which reads the variable
    added: bool = False

    def after(self) -> str:
        if self.added:
            return "no regularizer or add_loss term depends on it"
        if not self.ends:
            return "nothing in the graph reads its value"
        return f"it feeds only {wording.cut_names_at(self.ends)}"

    def message(self) -> str:
        return self.after() if self.added else f"the loss never reads it: {self.after()}"


@registered
@dataclass(frozen=True, kw_only=True)
class NoVarList(Cause):
    """``api``: ``compute_gradients`` or ``minimize``; ``names``: the variables the loss
    reads."""

    id = "no-var-list"
    status = Status.DISCONNECTED
    rule = "NoVarList"
    title = "`compute_gradients` or `minimize` given no `var_list`"
    help = (
        "TensorFlow 1 then differentiates every trainable variable of the graph and returns "
        "None for each the loss does not read (tensorflow/tensorflow#1511)."
    )
    fixes = ("var-list",)

    api: str = ""

    def _which(self) -> str:
        shown = ", ".join(self.names[:3]) + (
            f" and {len(self.names) - 3} more" if len(self.names) > 3 else ""
        )
        return f"a var_list of {shown}" if self.names else "a var_list"

    def message(self) -> str:
        return (
            f"{self.api}() was given no var_list, so it differentiates every trainable "
            f"variable, and this loss never reads this one; pass {self._which()} (the "
            f"{len(self.names)} variables the loss reads)"
        )

    def fix(self, c: Context) -> Fix:
        return Fix(
            "var-list",
            c.site,
            f"{c.api} at {c.site} was given no `var_list`, so it differentiates every "
            f"trainable variable, {name(c.variable)} included, which {c.target} does not "
            f"read: pass {self._which()}.",
        )


@registered
@dataclass(frozen=True, kw_only=True)
class LeftOut(Cause):
    """``names``: a trainable variable a TensorFlow 1 loss reads; ``line``: where the program
    made the ``var_list`` that leaves it out ("" when not known); ``api``: the call given it.
    No gradient call asks for it and no op of the graph writes it, while an optimizer trains
    the others (``watcher/var_lists.py``)."""

    id = "left-out-of-var-list"
    status = Status.EXCLUDED
    rule = "VariableLeftOutOfVarList"
    title = "A variable the loss reads that every `var_list` leaves out"
    help = (
        "The loss reads a trainable variable that no gradient call's var_list names and "
        "nothing assigns: it keeps its initial value for the whole of training, and "
        "TensorFlow says nothing (seed 001: var_lists sliced from tf.trainable_variables())."
    )
    fixes = ("var-list",)

    api: str = ""

    def message(self) -> str:
        variable = (*self.names, "")[0]
        made = f" (made at {self.line})" if self.line else ""
        return (
            f"the loss reads `{variable}`, but the var_list{made} leaves it out and no op of "
            "the graph assigns it"
        )

    def fix(self, c: Context) -> Fix:
        variable = c.variable or (*self.names, "")[0]
        where = self.line or c.site
        api = self.api or "the gradient call"
        made = (f"the var_list made at {self.line}" if self.line
                else f"the var_list given to {api} at {c.site}")  # fmt: skip
        return Fix(
            "var-list",
            where,
            f"{made} leaves out `{variable}`, which the loss reads, so it never trains: add it "
            f"to that var_list (or to another loss's); if it is meant to stay fixed, make it "
            "with `trainable=False`.",
        )


@registered
@dataclass(frozen=True, kw_only=True)
class AskedOthers(Cause):
    """A gradient call that asks for variables the loss reads only as constants (a target
    network's, through ``stop_gradient`` or computed outside the tape) while the variables it
    does train were not asked (a DQN's ``tape.gradient(loss, target.trainable_variables)``).

    ``line``: the call's ``FILE:LINE``; ``asked``: what the call was given, as the user wrote
    it (``model_target.trainable_variables``; "" unknown); ``names``: the variables a
    gradient reaches that the call did not ask for (TensorFlow's own answer for them);
    ``holder``: the name the user's code holds them under (``model``; "" unknown);
    ``through``: how the asked variables reach the loss (``through `tf.stop_gradient` at
    dqn.py:28``); ``passed``: said of an ``apply_gradients`` handed that call's Nones;
    ``also``: the asked variables' own cause, where it names a line (outside the tape)."""

    id = "asks-other-variables"
    status = Status.DISCONNECTED
    rule = "GradientAskedForOtherVariables"
    title = "A gradient asked for variables the loss does not train (a wrong `var_list`)"
    help = (
        "The call asks for variables the loss reads only as constants (a target network's, "
        "through stop_gradient or computed outside the tape), and not for the variables the "
        "loss does train: every gradient is None and nothing trains."
    )
    fixes = ("var-list",)
    first = True

    asked: str = ""
    holder: str = ""
    through: str = ""
    passed: bool = False

    def _asked(self) -> str:
        return f"`{self.asked}`" if self.asked else "variables"

    def _trained(self) -> str:
        count = f"the {len(self.names)} variables" if len(self.names) > 1 else "the variable"
        own = f" of `{self.holder}`" if self.holder else ""
        shown = listed([f"`{n}`" for n in self.names])
        return f"{count}{own} it trains ({shown})"

    def _pass(self) -> str:
        if self.holder:
            return f"`{self.holder}.trainable_variables`"
        return "the variables the loss trains"

    def message(self) -> str:
        if self.passed:
            return (
                f"the call at {self.line} asked for {self._asked()}, not for this variable: "
                "apply_gradients got the Nones it returned for those"
            )
        return (
            f"asked for {self._asked()}, which the loss reads only as constants, and not for "
            f"{self._trained()}"
        )

    def fix(self, c: Context) -> Fix:
        how = self.through or "through values computed outside the tape"
        return Fix(
            "var-list",
            self.line,
            f"The gradient call at {self.line} asks for {self._asked()}, which the loss reads "
            f"only as constants ({how}: a target network's values, rightly kept out of the "
            f"gradient), and not for {self._trained()}: pass {self._pass()} there, and zip "
            "the gradients with that same list in `apply_gradients`.",
        )

    @staticmethod
    def through_of(cuts: Sequence[CutPoint], said: Cause | None) -> str:
        """How the asked variables reach the loss, from one's cut points or cause."""
        if cuts:
            cut = cuts[0]
            op = "`tf.stop_gradient`" if cut.op in STOP_TYPES else f"`{cut.op}`"
            return f"through {op} at {cut.source or cut.node}"
        if isinstance(said, OutsideTape) and said.line:
            return f"made at {said.line}, while the tape was not recording"
        if isinstance(said, LeftTensorFlow) and said.line:
            return f"through a value that left TensorFlow at {said.line}"
        return "through values computed outside the tape"


@registered
@dataclass(frozen=True, kw_only=True)
class UnwatchedVariable(Cause):
    id = "unwatched-variable"
    status = Status.DISCONNECTED
    rule = "VariableNotWatched"
    title = "A variable a `watch_accessed_variables=False` tape never watched"
    help = "The tape watches only what tape.watch() names, and nothing named it."
    fixes = ("watch",)

    def message(self) -> str:
        return (
            "never watched: the tape has watch_accessed_variables=False and no tape.watch() of it"
        )

    def fix(self, c: Context) -> Fix:
        return Fix(
            "watch",
            c.site,
            f"The tape has `watch_accessed_variables=False` and never watches "
            f"{name(c.variable)}: call `tape.watch({short(c.variable)})` first thing inside "
            "`with tf.GradientTape(...) as tape:`, or drop `watch_accessed_variables=False`.",
        )


@registered
@dataclass(frozen=True, kw_only=True)
class UnwatchedTensor(Cause):
    id = "unwatched-tensor"
    status = Status.DISCONNECTED
    rule = "TensorNotWatched"
    title = "A tensor source the tape never watched"
    help = "A tape follows variables on its own, but a plain tensor only after tape.watch()."
    fixes = ("watch",)

    def message(self) -> str:
        return "never watched: a tensor, which a tape follows only after tape.watch() of it"

    def fix(self, c: Context) -> Fix:
        return Fix(
            "watch",
            c.site,
            f"{name(c.variable)} is a tensor, and a tape follows a tensor only once it is "
            "watched: call `tape.watch(x)` first thing inside `with tf.GradientTape() as "
            "tape:` (before the line that uses it), or make it a `tf.Variable`.",
        )


@registered
@dataclass(frozen=True, kw_only=True)
class NotTrainable(Cause):
    id = "not-trainable"
    status = Status.FROZEN
    rule = "NotTrainable"
    title = "A variable that is not trainable"
    help = "A tape watches only trainable variables."

    def message(self) -> str:
        return "not trainable: a tape watches only trainable variables"


@registered
@dataclass(frozen=True, kw_only=True)
class Unread(Cause):
    id = "unread"
    status = Status.DISCONNECTED
    rule = "NoRecordedOpReadsIt"
    title = "A source no op the tape recorded reads"
    help = "Eager code runs only the branch of a tf.cond or an if that is taken."

    def message(self) -> str:
        return (
            "no op the tape recorded reads it (eager code runs only the branch of a tf.cond or "
            "an if that is taken)"
        )


@registered
@dataclass(frozen=True, kw_only=True)
class PassedNone(Cause):
    id = "passed-none"
    status = Status.DISCONNECTED
    rule = "ProgramPassedNone"
    title = "A None the program passed to `apply_gradients` itself"
    help = "The program passed None to the optimizer, not a gradient a watched call returned."

    def message(self) -> str:
        return "the program passed None, not a gradient a watched call returned"


@registered
@dataclass(frozen=True, kw_only=True)
class UnreadOutput(Cause):
    """``names``: the model's outputs the variable reaches (each once); ``model``: the
    model's name; ``line``: where the loss was made ("" unknown); ``compiled``: the model
    trains with Keras' own step, whose loss is compile()'s; ``part``: the call's loss is that
    compiled loss alone (one output's); ``compiled_at``: the user's line of that
    ``compile()``, where the head was left out ("" unknown)."""

    id = "unread-output"
    status = Status.DISCONNECTED
    rule = "OutputNoLossReads"
    title = "An output no loss reads"
    help = (
        "The variable reaches only model outputs that no loss reads (compile(loss=[..., "
        "None]), a head the custom loss forgets); Keras warns that gradients do not exist."
    )
    fixes = ("unread-output",)

    model: str = ""
    compiled: bool = False
    part: str = ""
    compiled_at: str = ""

    def _heads(self) -> str:
        return ", ".join(f"'{h}'" for h in self.names)

    def _outputs(self) -> str:
        return f"output{'s' if len(self.names) > 1 else ''} {self._heads()}"

    def message(self) -> str:
        if self.part:  # one loss of several: the others read those outputs
            return f"reaches only {self._outputs()}, which loss '{self.part}' does not read"
        if self.compiled:
            at = f" at {self.compiled_at}" if self.compiled_at else ""
            return (
                f"reaches only {self._outputs()}, which no loss reads (compile(){at} gives it "
                "no loss)"
            )
        loss = wording.loss_made_at(self.line)
        return f"reaches only {self._outputs()} of model '{self.model}', which {loss} does not read"

    def fix(self, c: Context) -> Fix:
        heads = self._heads()
        if not (self.part or self.compiled):
            heads += f" of model '{self.model}'"
        compile_ = "`compile(loss=...)`"
        if self.compiled and self.compiled_at:
            compile_ = f"`compile(loss=...)` at {self.compiled_at}"
        return Fix(
            "unread-output",
            self.compiled_at if self.compiled and self.compiled_at else c.site,
            f"{name(c.variable)} feeds only output {heads}, which no loss reads: give it a "
            f"loss (in {compile_}, one per output, or in the loss your step computes), "
            "or drop that output from the model, or freeze its layer (`layer.trainable = "
            "False`, then `compile()`) if it is meant to stay as it is.",
        )


@registered
@dataclass(frozen=True, kw_only=True)
class OffPath(Cause):
    """``model``: the model whose layer is on no path from its inputs to its outputs."""

    id = "off-path"
    status = Status.DISCONNECTED
    rule = "LayerOffThePath"
    title = "A layer on no path from the model's inputs to its outputs"
    help = "The model's call() builds the layer but never uses its output for the outputs."
    fixes = ("off-path-layer",)

    model: str = ""

    def message(self) -> str:
        return (
            f"reaches no output of model '{self.model}': its layer is not on the path from the "
            "model's inputs to its outputs"
        )

    def fix(self, c: Context) -> Fix:
        ends = next((a for a in self.also if isinstance(a, PathEnds) and a.line), None)
        returned = _return_after(ends.line) if ends is not None else ""
        if ends is not None and returned:  # called in call(), its value dropped before return
            return Fix(
                "off-path-layer",
                returned,
                f"The layer of {name(c.variable)} is called, but the value made at {ends.line} "
                f"never reaches what `call()` returns at {returned} (model '{self.model}'): "
                "return it or use it in the outputs if it is meant to train (which changes "
                "what the model computes), or remove the layer if it is unused (the outputs "
                "stay the same).",
            )
        return Fix(
            "off-path-layer",
            c.site,
            f"The layer of {name(c.variable)} is not called between the model's inputs and "
            f"outputs (model '{self.model}'): remove it if it is unused (the outputs stay the "
            "same), or call it in `call()` (or in the functional graph that builds the "
            "outputs), which changes what the model computes.",
        )


def _return_after(line: str) -> str:
    """``FILE:N`` of the ``return`` that ends the function holding ``line`` (``FILE:LINE``),
    the first one after that line; "" when the file cannot be read or has none."""
    place = Location.parse(line)
    if place is None:
        return ""
    filename, at = place.file, place.line
    try:
        tree = ast.parse("".join(linecache.getlines(filename)))
    except (SyntaxError, ValueError):
        return ""
    holders = [n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))
               and n.lineno <= at <= (n.end_lineno or n.lineno)]  # fmt: skip
    if not holders:
        return ""
    function = max(holders, key=lambda n: n.lineno)
    returns = sorted(n.lineno for n in ast.walk(function)
                     if isinstance(n, ast.Return) and n.lineno > at)  # fmt: skip
    return f"{filename}:{returns[0]}" if returns else ""


# -- why a gradient is all zero ----------------------------------------------------------------


@registered
@dataclass(frozen=True, kw_only=True)
class Filled(Cause):
    """An all-zero gradient TensorFlow filled in for a missing one
    (``unconnected_gradients=ZERO``); ``also`` the cause of the missing path, when known."""

    id = "filled"
    status = Status.ZERO
    rule = "ZerosFilledIn"
    title = "Zeros TensorFlow filled in for a missing gradient"
    help = "unconnected_gradients=ZERO turns a None gradient into zeros."

    def message(self) -> str:
        return "no gradient flows"

    def __str__(self) -> str:
        why = f": {'; '.join(str(a) for a in self.also)}" if self.also else ""
        return f"no gradient flows{why}; TensorFlow filled zeros (unconnected_gradients=ZERO)"


@registered
@dataclass(frozen=True, kw_only=True)
class Underflow(Cause):
    id = "underflow"
    status = Status.ZERO
    rule = "Float16Underflow"
    title = "float16 values that underflow to 0"
    help = "A loss scale (keras.optimizers.LossScaleOptimizer) keeps them representable."

    def message(self) -> str:
        return (
            "every element is 0: float16 values on its path underflow to 0 (a loss scale, "
            "keras.optimizers.LossScaleOptimizer, keeps them representable)"
        )


@registered
@dataclass(frozen=True, kw_only=True)
class BranchZero(Cause):
    """``line``: the ``tf.cond`` (or ``tf.py_function``, ``op`` ``EagerPyFunc``) every path
    crosses."""

    id = "branch-zero"
    status = Status.ZERO
    rule = "UntakenBranch"
    title = "Every path crosses a `tf.cond` whose branch was not taken"
    help = "TensorFlow gives the variables of a branch not taken zeros, not None."

    def message(self) -> str:
        if self.op == "EagerPyFunc":
            return (
                f"every element is 0: every path crosses the tf.py_function at {self.line}, "
                "whose gradient is what the function's own TensorFlow ops give: zero for a "
                "value it takes out of TensorFlow (.numpy(), a numpy function)"
            )
        return (
            f"every element is 0: every path crosses the tf.cond at {self.line}, and TensorFlow "
            "gives the variables of a branch not taken zeros (eager code, which runs the taken "
            "branch only, gets None)"
        )


@registered
@dataclass(frozen=True, kw_only=True)
class Multiplied(Cause):
    """``line``: the call; ``values``: its ``output_gradients``' distinct values; ``zeroed``:
    every gradient is 0 (else flipped)."""

    id = "multiplied"
    status = Status.ZERO
    rule = "OutputGradientsMultiplier"
    title = "A call's `output_gradients` that zero or flip its gradients"
    help = "Every gradient of the call is multiplied by its output_gradients."

    values: tuple[float, ...] = ()
    zeroed: bool = False

    def message(self) -> str:
        shown = ", ".join(f"{v:g}" for v in self.values)
        if self.zeroed:
            return (
                f"zeroed by output_gradients={shown} at {self.line}: every gradient of this "
                "call is 0"
            )
        every = "flipped" if self.values and self.values[-1] < 0 else (
            "flipped where its weight is negative")  # fmt: skip
        return f"{every} by output_gradients={shown} at {self.line}: an optimizer ascends this loss"


def multiplied(status: str, values: Sequence[float], site: str) -> Multiplied | None:
    """A source's cause when the call's ``output_gradients`` zeroes or flips its gradient,
    else None."""
    if not values or status not in (Status.ZERO, Status.OK):
        return None
    if status == Status.ZERO and tuple(values) == (0.0,):
        return Multiplied(line=site, values=tuple(values), zeroed=True)
    if status == Status.OK and values[0] < 0:
        return Multiplied(line=site, values=tuple(values))
    return None


@registered
@dataclass(frozen=True, kw_only=True)
class OverflowSkipped(Cause):
    """``scale``: the loss scale; ``finite``: the later step whose gradient is finite."""

    id = "overflow-skipped"
    status = Status.NAN
    rule = "LossScaleOverflow"
    title = "An overflow a dynamic loss scale skips"
    help = "Keras' LossScaleOptimizer skips a step whose gradients overflow and lowers its scale."

    scale: float = 0.0
    finite: int = 0

    def message(self) -> str:
        return (
            f"the gradients overflowed at loss scale {self.scale:g}: Keras' LossScaleOptimizer "
            f"skipped this step and lowered its scale, as dynamic loss scaling does (step "
            f"{self.finite} is finite)"
        )


# -- a ``trainable`` flag changed after Keras traced the train step ----------------------------


@registered
@dataclass(frozen=True, kw_only=True)
class ChangedAfterTrace(Cause):
    """``line``: where the train step was traced; ``trained``: the step still trains the
    variable (frozen since), else leaves it out (made trainable since)."""

    id = "changed-after-trace"
    status = Status.EXCLUDED
    rule = "TrainableChangedAfterTrace"
    title = "A `trainable` flag changed after the train step was traced"
    help = (
        "Keras reads trainable when it traces the train step (the first fit() after "
        "compile()) and reuses the step until the next compile()."
    )
    fixes = ("compile-again",)
    first = True

    trained: bool = False
    #: the flag changed while a ``fit()`` ran (a callback), where only a new trace helps
    during: bool = False

    def message(self) -> str:
        if self.during and self.trained:
            return (
                f"frozen while this fit() ran (a callback), after its train step was traced at "
                f"{self.line}, which still updates it: call "
                "self.model.make_train_function(force=True) after changing trainable"
            )
        if self.during:
            return (
                f"made trainable while this fit() ran (a callback), after its train step was "
                f"traced at {self.line}, which leaves it out: end the fit() there and call "
                "compile() with a new optimizer before the next (the built one knows only its "
                "first variables)"
            )
        if self.trained:
            return (
                f"frozen after the train step was traced at {self.line}, which still updates "
                "it: call compile() again after changing trainable"
            )
        return (
            f"made trainable after the train step was traced at {self.line}, which leaves it "
            "out: call compile() again (with a new optimizer, if you pass one: a built one "
            "updates only its first variables)"
        )

    def fix(self, c: Context) -> Fix:
        if self.during and self.trained:  # a callback froze it: trace the step again
            return Fix(
                "compile-again",
                c.site,
                f"The `trainable` flag of {name(c.variable)} changed while `fit()` ran (in a "
                "callback), after Keras traced the train step: call "
                "`self.model.make_train_function(force=True)` right after changing it, so the "
                "next step is traced with the new flag.",
            )
        if self.during:  # the built optimizer cannot take it
            return Fix(
                "compile-again",
                c.site,
                f"{name(c.variable)} was made trainable while `fit()` ran (in a callback), after "
                "Keras traced the train step, and the optimizer was built without it: stop that "
                "`fit()` there (two `fit()` calls, one per phase) and call `compile()` with a new "
                "optimizer between them.",
            )
        return _compile_again(c, "")


@registered
@dataclass(frozen=True, kw_only=True)
class SinceCompile(Cause):
    """``line``: the ``compile()``; ``api``: the ``fit()`` that traced the step;
    ``trainable``: the flag now; ``idle``: the step then trains nothing at all."""

    id = "since-compile"
    status = Status.EXCLUDED
    rule = "TrainableChangedAfterCompile"
    title = "A `trainable` flag changed between `compile()` and the `fit()` that traced the step"
    help = "Keras 3 reads trainable when it traces the train step, not at compile()."
    fixes = ("compile-again",)
    first = True

    api: str = ""
    trainable: bool = False
    idle: bool = False

    def message(self) -> str:
        if self.trainable:
            return (
                f"made trainable after compile() at {self.line}: this {self.api}() trains it "
                "(Keras 3 reads trainable when it traces the step, not at compile())"
            )
        if self.idle:
            return (
                f"trainable at compile() at {self.line}, frozen when this {self.api}() traced "
                f"the train step, which so trains nothing: set trainable = True before this "
                f"{self.api}() (Keras 3 reads it there, not at compile())"
            )
        return (
            f"trainable at compile() at {self.line}, frozen when this {self.api}() traced the "
            "train step, which so never trains it (Keras 3 reads trainable there, not at "
            "compile())"
        )

    def fix(self, c: Context) -> Fix | None:
        # made trainable, the step trains it; frozen, it is not trained, as meant, unless the
        # step then trains nothing at all
        return _compile_again(c, self.line) if self.idle and not self.trainable else None


def _compile_again(c: Context, compiled_at: str) -> Fix:
    compiled = f" at {compiled_at}" if compiled_at else ""
    before = f"the `{c.api or 'fit'}()` at {c.site}" if c.site else "`fit()`"
    return Fix(
        "compile-again",
        c.site or compiled_at,
        f"The `trainable` flag of {name(c.variable)} changed after `compile()`{compiled}, "
        f"which Keras reads only when it traces the train step: call `compile()` again after "
        f"changing it, before {before} (with a new optimizer, if you pass one).",
    )


# -- no path, no cause; no op cut it; a zero gradient ------------------------------------------


#: Calls that take every trainable variable unless given a ``var_list`` (seed 000).
EVERY_VARIABLE = ("compute_gradients", "minimize")


@registered
@dataclass(frozen=True, kw_only=True)
class Disconnected(Cause):
    id = "disconnected"
    status = Status.DISCONNECTED
    rule = "NoPathToTheLoss"
    title = "No path from the variable to the loss"
    help = (
        "Nothing the loss computes reads the variable. TensorFlow returns None for it, and "
        "Keras warns 'Gradients do not exist for variables'."
    )
    fixes = ("var-list", "unread-variable")

    def message(self) -> str:
        return "no path leads from it to the loss"

    def fix(self, c: Context) -> Fix:
        own = reads_list(c.reads) if c.reads else "the variables it reads"
        arg = (f"`var_list={own}`" if len(c.reads) <= SHOWN else f"`var_list=` {own}") if (
            c.reads) else "`var_list=`"  # fmt: skip
        if c.api in EVERY_VARIABLE and not c.spec:
            also = f"; {name(c.variable)} gets its gradient from {listed(c.reached_by)}" if (
                c.reached_by) else ""  # fmt: skip
            return Fix(
                "var-list",
                c.site,
                f"{c.api} at {c.site or 'this line'} differentiates {c.target} with respect to "
                f"{name(c.variable)}, which is not on its path{also}: pass {arg}, the "
                "variables this loss reads.",
            )
        if c.reached_by:
            ask = f"{c.api} at {c.site}" if c.api and c.site else c.api or "the gradient call"
            if c.spec:
                how = (
                    "give the loss its own variables (`vars:` with its patterns), or list "
                    f"`{c.variable}` under `expect.<loss>.none`"
                )
            elif c.api in EVERY_VARIABLE:
                how = "pass only the loss's own variables, `compute_gradients(loss, var_list=...)`"
            else:
                how = (f"pass only the variables the loss reads, {own}" if len(c.reads) <= SHOWN
                       else f"pass only {own}")  # fmt: skip
            return Fix(
                "var-list",
                c.site,
                f"{c.target} does not read {name(c.variable)}, which gets its gradient from "
                f"{listed(c.reached_by)}: {ask} asks for it anyway. If that is meant (one loss "
                f"per head), {how}.",
            )
        leave = []
        if c.reads and not c.spec:
            others = own if len(c.reads) <= SHOWN else reads_list(c.reads, "others")
            leave = [f"leave it out of this call's sources (the loss reads {others})"]
        return Fix(
            "unread-variable",
            c.site,
            f"No loss reads {name(c.variable)}, so it would never train. The evidence does not "
            "single out why.",
            (
                "give the head or output it belongs to a loss",
                "remove it if it is unused",
                "freeze it (`trainable=False`) if it is meant to stay as it is",
                *leave,
            ),
        )


@registered
@dataclass(frozen=True, kw_only=True)
class Unexplained(Cause):
    id = "unexplained"
    status = Status.UNEXPLAINED
    rule = "NoCauseFound"
    title = "No cause found"
    help = "TensorFlow returns no gradient and gradscope found no op that cut it."
    fixes = ("unexplained",)

    def message(self) -> str:
        return "TensorFlow returns no gradient and gradscope found no cause"

    def fix(self, c: Context) -> Fix:
        return Fix(
            "unexplained",
            c.site,
            f"TensorFlow returns no gradient for {name(c.variable)} and gradscope found no op "
            "that cut it; the evidence singles out no fix.",
            (
                "a value converted to NumPy or a Python number and back",
                "a `tf.py_function` or `tf.numpy_function` on the path",
                "ops run under `tape.stop_recording()`",
            ),
        )


@registered
@dataclass(frozen=True, kw_only=True)
class ZeroDerivative(Cause):
    """``line``, ``op``: the op every path crosses whose gradient TensorFlow defines as 0
    everywhere (``Sign``). Said first: no other change gives the variable a gradient."""

    id = "zero-derivative"
    status = Status.ZERO
    rule = "ZeroDerivativeOnEveryPath"
    title = "`tf.sign` (an op whose gradient is 0 everywhere) on every path"
    help = (
        "TensorFlow defines the gradient of tf.sign as zero everywhere (not None): every step "
        "hands the variable a gradient of 0, so it never trains, and no warning says so. A "
        "binarized network needs a straight-through estimator there."
    )
    fixes = ("straight-through",)
    first = True

    def message(self) -> str:
        return (
            f"every path crosses {_op_code(self.op)} at {self.line or 'an unknown line'}, "
            "whose gradient TensorFlow defines as 0 everywhere: the gradient is 0 at every "
            "step, so it never trains"
        )

    def fix(self, c: Context) -> Fix:
        code = _op_code(self.op)
        return Fix(
            "straight-through",
            self.line,
            f"At {self.line or 'the line that calls it'}, `{code}(x)` passes a gradient of 0 "
            f"to {name(c.variable)}: keep its value and pass the gradient straight through, "
            f"`x + tf.stop_gradient({code}(x) - x)` (a binarized network's estimator; clip "
            "`x` to [-1, 1] first for the hard-tanh one).",
        )


@registered
@dataclass(frozen=True, kw_only=True)
class ZeroGradient(Cause):
    id = "zero-gradient"
    status = Status.ZERO
    rule = "ZeroGradient"
    title = "A gradient that is exactly zero"
    help = "A differentiable path exists, but nothing flows along it."
    fixes = ("zero-gradient",)

    def message(self) -> str:
        return "its gradient is exactly 0 everywhere"

    def fix(self, c: Context) -> Fix:
        return Fix(
            "zero-gradient",
            c.site,
            f"{name(c.variable)} gets a gradient that is exactly zero everywhere: a "
            "differentiable path exists, but nothing flows along it. The evidence does not "
            "single out why.",
            (
                "dead ReLUs before it (`LeakyReLU`, He initialisation)",
                "a mask or `tf.where` that zeroes its path",
                "a loss that is constant in it",
            ),
        )


# -- a NaN, by the op where it first appeared --------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class NanCause(Cause):
    """Where a NaN or an infinity first appeared: ``line``, ``op``, ``node``; ``where``:
    ``forward`` (a value) or ``gradient``; ``value``: ``nan``, ``inf``, ``-inf``."""

    status = Status.NAN
    ops: ClassVar[frozenset[str]] = frozenset()

    node: str = ""
    where: str = "forward"
    value: str = "nan"

    @property
    def source(self) -> str:
        return self.line

    def message(self) -> str:
        return wording.origin_text(self)

    def _at(self) -> str:
        return f"At {self.line}" if self.line else f"At `{self.node}`"

    def _what(self) -> str:
        return "its gradient" if self.where == "gradient" else "its value"


def of_nan(origin: wording.Origin | None) -> NanCause:
    """The cause of a NaN from where it first appeared: the first registered NaN cause whose
    ops hold its op; none found (or a value that already held it): candidates."""
    if origin is None:
        return NanUnknown()
    found = next((cls for cls in CAUSES.values() if issubclass(cls, NanCause)
                  and origin.op in cls.ops), NanUnknown)  # fmt: skip
    return found(line=origin.source, op=origin.op, node=origin.node, where=origin.where,
                 value=origin.value)  # fmt: skip


#: Each log-like op with its input clipped above the point where it is not finite.
_LOGS = {"Log": "tf.math.log(tf.maximum(x, 1e-7))",
         "Log1p": "tf.math.log1p(tf.maximum(x, 1e-7 - 1.0))",
         "Xlogy": "tf.math.xlogy(a, tf.maximum(x, 1e-7))",
         "Digamma": "tf.math.digamma(tf.maximum(x, 1e-7))",
         "Lgamma": "tf.math.lgamma(tf.maximum(x, 1e-7))"}  # fmt: skip


@registered
@dataclass(frozen=True, kw_only=True)
class NanLog(NanCause):
    id = "nan-log"
    rule = "LogOfZero"
    title = "NaN from `log` at 0"
    help = "log(0) is -inf, and its gradient infinite."
    fixes = ("safe-log",)
    ops = frozenset(_LOGS)

    def fix(self, c: Context) -> Fix:
        return Fix(
            "safe-log",
            self.line,
            f"{self._at()} {wording.cut_quoted(self, at=False)} makes {self._what()} non-finite "
            f"at 0: clip its input, `{_LOGS.get(self.op, _LOGS['Log'])}`, which keeps every "
            "value of x from the bound up (an epsilon, `x + 1e-7`, shifts them all).",
        )


#: The call each root-like op is written with, and the input it is safe at.
_ROOTS = {"Sqrt": ("tf.sqrt", "1.0"), "Rsqrt": ("tf.math.rsqrt", "1.0"),
          "Pow": ("tf.pow", "1.0"), "Acos": ("tf.acos", "0.0"), "Asin": ("tf.asin", "0.0"),
          "Atanh": ("tf.atanh", "0.0")}  # fmt: skip


@registered
@dataclass(frozen=True, kw_only=True)
class NanRoot(NanCause):
    id = "nan-root"
    rule = "RootAtTheEdgeOfItsDomain"
    title = "NaN from `sqrt` at 0"
    help = "The gradient of sqrt(x) is 1 / (2 sqrt(x)): infinite at 0."
    fixes = ("double-where",)
    ops = frozenset(_ROOTS)

    def fix(self, c: Context) -> Fix:
        quoted = wording.cut_quoted(self, at=False)
        return Fix("double-where", self.line, f"{self._at()} {quoted} {self._guard()}")

    def _guard(self) -> str:
        """The double-where guard, written so the values stay what they were: ``sqrt`` is 0
        at 0, so the guard gives 0 there; any other op keeps its own value where the input is
        outside the safe set, with no gradient through it."""
        if self.op == "Sqrt":
            return (
                f"makes {self._what()} non-finite at 0 (its gradient is 1/(2·sqrt(x))): guard "
                "it with the double-where pattern, `ok = x > 0; y = tf.where(ok, "
                "tf.sqrt(tf.where(ok, x, 1.0)), 0.0)`, which has sqrt's values (0 at 0) and a "
                "finite gradient."
            )
        fn, safe = _ROOTS.get(self.op, ("f", "safe"))
        args = ", a" if self.op == "Pow" else ""
        return (
            f"makes {self._what()} non-finite at the edge of its domain: guard it with the "
            f"double-where pattern, `ok = <x strictly inside the domain>; y = tf.where(ok, "
            f"{fn}(tf.where(ok, x, {safe}){args}), {fn}(tf.stop_gradient(x){args}))`, which "
            "keeps every value and gives a finite gradient."
        )


@registered
@dataclass(frozen=True, kw_only=True)
class NanDivide(NanCause):
    id = "nan-divide"
    rule = "DivisionByZero"
    title = "NaN from a division by 0"
    help = "x / s with s = 0 is infinite (0 / 0 is NaN), and so is its gradient."
    fixes = ("divide-no-nan",)
    ops = frozenset({"RealDiv", "Div", "Reciprocal", "Inv", "FloorDiv", "Xdivy", "TruncateDiv"})

    def fix(self, c: Context) -> Fix:
        return Fix(
            "divide-no-nan",
            self.line,
            f"{self._at()} {wording.cut_quoted(self, at=False)} divides by 0: use "
            "`tf.math.divide_no_nan(a, b)`, which is `a / b` wherever `b` is not 0, and 0 "
            "there.",
        )


@registered
@dataclass(frozen=True, kw_only=True)
class NanUnknown(NanCause):
    id = "nan-unknown"
    rule = "NonFiniteGradient"
    title = "A NaN whose op is not singled out"
    help = "Where the NaN first appeared is unknown, or an op no guard is known for."
    fixes = ("nan-candidates",)

    def message(self) -> str:
        if not self.op:
            return "its gradient holds a NaN or an infinity"
        return wording.origin_text(self)

    def fix(self, c: Context) -> Fix:
        if not self.op or self.op in wording.VALUE_OPS:
            what = (
                f"{self.node}'s value is already non-finite ({self.line})"
                if self.op
                else f"{name(c.variable)}'s gradient holds a NaN or an infinity"
            )
            return Fix(
                "nan-candidates",
                self.line if self.op else c.site,
                f"{what}; the evidence does not single out the op that made it.",
                (
                    "a `log` or `sqrt` of 0, or a division by 0: guard it (double `tf.where`, "
                    "or clip its input)",
                    "a learning rate too high (the weights diverged)",
                    "`tf.debugging.enable_check_numerics()` to stop at the first op",
                ),
            )
        return Fix(
            "nan-candidates",
            self.line,
            f"{self._at()} {wording.cut_quoted(self, at=False)} first makes {self._what()} "
            "non-finite; the evidence does not single out a guard.",
            (
                "keep its input inside the op's domain (`tf.clip_by_value`)",
                "the double-where pattern: compute it only where the input is safe",
            ),
        )


# -- a loss's own cause, a problem's, a timeline's trend ---------------------------------------


#: A loss gradscope answered eagerly says so.
RAN_EAGERLY = (
    "gradscope ran this loss eagerly under a GradientTape, and its statuses and norms come "
    "from there."
)


@registered
@dataclass(frozen=True, kw_only=True)
class Untraceable(Cause):
    """A loss that could not be traced as a ``tf.function``: ``how`` it failed (``numpy``:
    ``.numpy()``; ``number``: ``float(t)``; ``bool``: a tensor as a Python bool; anything
    else), ``line`` where ("" unknown), ``said`` TensorFlow's first line, ``cut``: a variable
    read before it gets no gradient (the path is cut outside TensorFlow)."""

    id = "untraceable"
    status = Status.UNEXPLAINED
    rule = "LossNotTraceable"
    title = "A loss that cannot be traced (a tensor converted to NumPy or a Python value)"
    help = (
        "A traced tf.function cannot turn a tensor into NumPy, a Python number or a bool; "
        "gradscope answers the loss eagerly, and a variable read before the conversion gets "
        "no gradient, with no op to name."
    )
    fixes = ("keep-tensorflow-ops",)

    how: str = ""
    said: str = ""
    cut: bool = False

    def message(self) -> str:
        at = f" at {self.line}" if self.line else ""
        outside = (
            " The path is cut outside TensorFlow (the value was converted to {what}), so there "
            "is no op to name: a variable read before that line that gets no gradient is "
            "none:unexplained."
        )
        if self.how == "numpy":
            more = outside.format(what="NumPy") if self.cut else ""
            return (
                f"converts a tensor to NumPy{at}, which a traced tf.function cannot do "
                f"({self.said}); {RAN_EAGERLY}{more}"
            )
        if self.how == "number":
            more = outside.format(what="a Python number") if self.cut else ""
            return (
                f"turns a tensor into a Python number{at}, which a traced tf.function cannot do "
                f"({self.said}); {RAN_EAGERLY}{more}"
            )
        if self.how == "bool":
            return (
                f"uses a tensor as a Python bool{at}, which a traced tf.function cannot do "
                f"({self.said}); {RAN_EAGERLY}"
            )
        return f"cannot be traced as a tf.function{at} ({self.said}); {RAN_EAGERLY}"

    def fix(self, c: Context) -> Fix | None:
        if self.how != "numpy" or not self.line:
            return None
        return LeftTensorFlow(line=self.line, how=".numpy()").fix(c)


@registered
@dataclass(frozen=True, kw_only=True)
class VariablePerCall(Cause):
    """``names``: the variables the loss creates each time it runs, ``lines`` where (each
    "" unknown; ``line`` the first's); ``untraceable``: the loss could not be traced for it
    (a traced tf.function refuses to create variables)."""

    id = "variable-per-call"
    status = Status.OK
    rule = "VariableMadeEveryCall"
    title = "A variable made on every call of the loss"
    help = (
        "The loss makes its tf.Variable each time it runs (as a layer that makes one in "
        "call() does): the update goes with the variable, so the loss never goes down."
    )
    fixes = ("build-add-weight",)

    lines: tuple[str, ...] = ()
    untraceable: bool = False

    def message(self) -> str:
        where = [*self.lines, *[""] * len(self.names)]
        shown = ", ".join(f"`{n}`" + (f" at {w}" if w else "")
                          for n, w in zip(self.names[:3], where, strict=False))  # fmt: skip
        created = (shown or "a variable") + (
            f" and {len(self.names) - 3} more" if len(self.names) > 3 else ""
        )
        fresh = (
            "it starts again from its initial value at every step and never trains. Create it "
            "once, outside the loss (in the target function, or in a layer's build())."
        )
        if self.untraceable:
            return (
                f"creates a new variable on every call ({created}): a traced tf.function "
                f"refuses that, and eagerly {fresh} {RAN_EAGERLY[:-1]}, without the "
                "variables it creates."
            )
        return f"creates a new variable on every call ({created}): {fresh}"

    def fix(self, c: Context) -> Fix:
        line = self.line or next((w for w in self.lines if w), "") or c.site
        return Fix(
            "build-add-weight",
            line,
            f"At {line or 'the line that makes it'} a new variable is made on every call, so it "
            "starts again from its initial value each step: create it once, in a Keras layer's "
            "`build()` with `self.add_weight(...)` (Keras then tracks and trains it), or "
            "outside the loss; never in `call()` or in the loss itself.",
        )


@registered
@dataclass(frozen=True, kw_only=True)
class Untracked(Cause):
    """``names``: ``(variable, attribute)`` of a ``tf.Variable`` a Keras layer holds where
    Keras does not track it; ``line``: the call that asked gradients for the others."""

    id = "untracked"
    status = Status.EXCLUDED
    rule = "VariableKerasDoesNotTrack"
    title = "A `tf.Variable` a Keras layer keeps where Keras 3 does not track it"
    help = (
        "model.trainable_variables leaves out a raw tf.Variable held in an attribute or a "
        "plain dict, so no gradient is asked for it."
    )
    fixes = ("build-add-weight",)

    def message(self) -> str:
        variable, attribute = (*self.names, "", "")[:2]
        return (
            f"the loss reads `{variable}` (`{attribute}`), a tf.Variable Keras does not track: "
            "model.trainable_variables leaves it out, and this call asks no gradient for it"
        )

    def fix(self, c: Context) -> Fix:
        variable, attribute = (*self.names, "", "")[:2]
        site = self.line or c.site
        short_name = attribute.rsplit(".", 1)[-1] or "w"
        return Fix(
            "build-add-weight",
            site,
            f"`{variable}` (`{attribute}`) is a raw tf.Variable, which Keras 3 does not track, "
            f"so `model.trainable_variables` (what {site} asks gradients for) leaves it out: "
            f"create it in the layer's `build()` with `self.{short_name} = "
            "self.add_weight(...)` (or as a `keras.Variable`), never in a plain dict or in "
            "`call()`; or add it to the variables given to `tape.gradient` and the optimizer.",
        )


@registered
@dataclass(frozen=True, kw_only=True)
class NotFloating(Cause):
    """``names``: the variable; ``dtype``: what it holds (``int32``); ``line``: where the
    program made it ("" for a spec's variable, or when unknown). Said first whatever the
    status: no change on the path gives an integer variable a gradient."""

    id = "not-floating"
    status = Status.FROZEN
    rule = "IntegerVariableTrainable"
    title = "A trainable variable that holds integers"
    help = "An integer variable gets no gradient; declare it not trainable."
    fixes = ("not-floating",)
    first = True

    dtype: str = ""

    def message(self) -> str:
        holds = f"holds {self.dtype} values" if self.dtype else "is not floating-point"
        made = f" (made at {self.line})" if self.line else ""
        return (
            f"it is trainable but {holds}{made}, and TensorFlow gives no gradient to a variable "
            "that is not floating-point"
        )

    def fix(self, c: Context) -> Fix:
        if not self.line:  # a spec's variable, or one whose line is unknown
            return Fix(
                "not-floating",
                c.site,
                f"`{c.variable}` holds integers, which get no gradient: declare it not "
                "trainable (`trainable: false`, `trainable=False`).",
            )
        holds = self.dtype or "integer"
        return Fix(
            "not-floating",
            self.line,
            f"`{c.variable}` holds {holds} values, which get no gradient: make it with "
            f"`trainable=False` at {self.line} and ask no gradient for it (a counter or a "
            "step is state, not a weight); if it is meant to learn, make it floating-point "
            '(`dtype="float32"`).',
        )


@registered
@dataclass(frozen=True, kw_only=True)
class UnexpectedGradient(Cause):
    id = "expectation"
    status = Status.OK
    rule = "GradientExpectedNone"
    title = "A gradient `expect.<loss>.none` rules out"
    help = "The variable gets a gradient the spec says it must not."
    fixes = ("expectation",)

    def message(self) -> str:
        return "it gets a gradient that expect.<loss>.none rules out"

    def fix(self, c: Context) -> Fix:
        loss = c.target.removeprefix("loss ").strip("`")
        return Fix(
            "expectation",
            c.site,
            f"`{c.variable}` gets a gradient that expect.{loss}.none rules out: if it must not "
            "learn from this loss, cut its path where it enters (`stop_gradient`) or leave it "
            "out of the loss's variables; if it may, drop the pattern from `expect`.",
        )


@registered
@dataclass(frozen=True, kw_only=True)
class NumericDiffers(Cause):
    id = "numeric-differs"
    status = Status.OK
    rule = "NotTheDerivative"
    title = "A gradient that is not the derivative of its loss (`--numeric`)"
    help = "Central finite differences disagree with TensorFlow's gradient."
    fixes = ("numeric-candidates",)

    def message(self) -> str:
        return "its gradient is not the derivative of the loss"

    def fix(self, c: Context) -> Fix:
        return Fix(
            "numeric-candidates",
            c.site,
            f"The gradient of `{c.variable}` is not the derivative of the loss; the evidence "
            "does not single out why.",
            (
                "a `tf.custom_gradient` whose `grad_fn` computes another derivative",
                "a straight-through estimator, meant: list it under expect.<loss>.numeric",
                "float32 round-off: run with --numeric in float64",
            ),
        )


@registered
@dataclass(frozen=True, kw_only=True)
class ReplicaLossScale(Cause):
    id = "replica-loss-scale"
    status = Status.OK
    rule = "LossNotScaledByGlobalBatch"
    title = "A loss averaged over each replica's own batch"
    help = "apply_gradients sums the replicas' gradients: N times the whole batch's gradient."
    fixes = ("compute-average-loss",)

    def message(self) -> str:
        return "it is averaged over each replica's own batch"

    def fix(self, c: Context) -> Fix:
        return Fix(
            "compute-average-loss",
            c.site,
            f"{c.target} is averaged over each replica's own batch, so the all-reduced "
            "gradient is the replicas' count times too large: average over the global batch, "
            "`tf.nn.compute_average_loss(per_example_loss, global_batch_size=...)`, in place "
            "of `tf.reduce_mean`.",
        )


@registered
@dataclass(frozen=True, kw_only=True)
class ReplicasDisagree(Cause):
    id = "replicas-disagree"
    status = Status.OK
    rule = "ReplicasDisagree"
    title = "Replicas that disagree"
    help = "Each replica's share of the batch takes a different path, or copies differ."
    fixes = ("replica-candidates",)

    def message(self) -> str:
        return "the replicas disagree"

    def fix(self, c: Context) -> Fix:
        return Fix(
            "replica-candidates",
            c.site,
            "The replicas disagree; the evidence does not single out why.",
            (
                "a data-dependent mask or branch: make every replica take the same ops",
                "a loss averaged per replica: `tf.nn.compute_average_loss`",
                "a variable updated outside the strategy's `apply_gradients`",
            ),
        )


@registered
@dataclass(frozen=True, kw_only=True)
class GradientMultiplier(Cause):
    """``values``: the distinct values of a loss's ``grad_loss`` (``output_gradients``)."""

    id = "gradient-multiplier"
    status = Status.OK
    rule = "GradLossMultiplier"
    title = "A `grad_loss` (`output_gradients`) multiplier"
    help = "Every gradient of the loss is multiplied by it: -1 makes an optimizer ascend."
    fixes = ("gradient-multiplier",)

    values: tuple[float, ...] = ()

    def message(self) -> str:
        return f"its gradients are multiplied by {', '.join(f'{v:g}' for v in self.values)}"

    def fix(self, c: Context) -> Fix | None:
        found = sorted(set(self.values))
        if not found or found == [1.0]:
            return None
        if len(found) > 1:
            flips = " and flips the sign of those with a negative weight" if found[0] < 0 else ""
            does = (
                f"weights the gradient of each element of the loss differently (from "
                f"{found[0]:g} to {found[-1]:g}){flips}, as multiplying each element would"
            )
        elif found[0] == -1:
            does = (
                "flips every gradient: an optimizer then ascends this loss (a GAN generator "
                "trained on the discriminator's loss); writing the loss the model minimises "
                "(`-d_loss`, or the non-saturating `-log D(G(z))`) does the same and reads "
                "plainly"
            )
        elif found[0] < 0:
            does = (
                f"flips every gradient and scales it by {-found[0]:g}: an optimizer ascends "
                "this loss"
            )
        elif found[0] == 0:
            does = "zeroes every gradient: nothing trains from this loss"
        else:
            does = f"scales every gradient by {found[0]:g}, as multiplying the loss would"
        shown = f"{found[0]:g}" if len(found) == 1 else "per element"
        return Fix(
            "gradient-multiplier",
            c.site,
            f"The `grad_loss`/`output_gradients` of {c.target} ({shown}) {does}.",
        )


@dataclass(frozen=True, kw_only=True)
class Trend(Cause):
    """What a timeline sees over training (its norms, not their cause): the layer
    (``names``), and the candidates."""

    candidates: ClassVar[tuple[str, ...]] = ()
    words: ClassVar[str] = ""

    def fix(self, c: Context) -> Fix:
        layer = c.variable.rsplit("/", 1)[0] if "/" in c.variable else c.variable
        return Fix(self.fixes[0], c.site, self.words.format(layer=layer), self.candidates)


@registered
@dataclass(frozen=True, kw_only=True)
class Dead(Trend):
    id = "dead"
    status = Status.ZERO
    rule = "DeadGradient"
    title = "A layer whose gradients stay all zero over training"
    help = "Its ReLU units died: they output 0 for every input."
    fixes = ("dead",)
    words = (
        "Layer `{layer}` gets all-zero gradients: its ReLU units have died. The evidence does "
        "not single out one fix."
    )
    candidates = (
        "`LeakyReLU` (or ELU) in place of ReLU",
        "He initialisation (`kernel_initializer='he_normal'`)",
        "a lower learning rate",
    )


@registered
@dataclass(frozen=True, kw_only=True)
class Vanishing(Trend):
    id = "vanishing"
    status = Status.OK
    rule = "VanishingGradient"
    title = "A layer whose gradient vanishes against its weights"
    help = "The variable barely changes."
    fixes = ("vanishing",)
    words = (
        "Layer `{layer}`'s gradient is vanishingly small against its weights. The evidence "
        "does not single out one fix."
    )
    candidates = (
        "normalisation (`BatchNormalization`, `LayerNormalization`)",
        "He initialisation and non-saturating activations (ReLU, not sigmoid/tanh)",
        "residual connections around deep stacks",
    )


@registered
@dataclass(frozen=True, kw_only=True)
class Exploding(Trend):
    id = "exploding"
    status = Status.OK
    rule = "ExplodingGradient"
    title = "A layer whose gradient explodes"
    help = "The next optimizer steps overshoot; NaN often follows."
    fixes = ("exploding",)
    words = (
        "Layer `{layer}`'s gradient grew far beyond its earlier norm. The evidence does not "
        "single out one fix."
    )
    candidates = (
        "clip it: `keras.optimizers.Adam(clipnorm=1.0)`",
        "a lower learning rate",
        "normalisation (`BatchNormalization`, `LayerNormalization`)",
    )


def trend(kind: str) -> Trend | None:
    """The cause of a timeline's ``dead``, ``vanishing`` or ``exploding`` finding."""
    cls = CAUSES.get(kind)
    return cls() if cls is not None and issubclass(cls, Trend) else None


def from_dict(data: Any) -> Cause | None:
    """A cause as ``to_dict`` wrote it, or None for an unknown id or a malformed one."""
    if not isinstance(data, dict) or data.get("id") not in CAUSES:
        return None
    cls = CAUSES[data["id"]]
    known = {f.name: f for f in dataclasses.fields(cls)}
    kwargs: dict[str, Any] = {}
    for key, value in data.items():
        if key not in known:
            continue
        if key == "also":
            kwargs[key] = tuple(c for c in map(from_dict, value or ()) if c is not None)
        elif key == "ends":
            kwargs[key] = tuple(CutPoint(str(e.get("node", "")), str(e.get("op", "")),
                                         str(e.get("kind", "")), str(e.get("source", "")))
                                for e in value or () if isinstance(e, dict))  # fmt: skip
        elif isinstance(value, list):
            kwargs[key] = tuple(value)
        else:
            kwargs[key] = value
    try:
        return cls(**kwargs)
    except TypeError:
        return None
