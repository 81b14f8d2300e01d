"""Which rows a big model's tables show: layers collapsed, identical cut points grouped, problems.

An 83-variable MobileNet is an 83-row matrix and 33 identical cut rows; ResNet50 is 214 rows
all ``ok``. Grouping keeps what differs: a run of consecutive variables that read the same
(the same status from every loss, the same problems) becomes one row naming its first and
last layer with a count, so 81 variables cut by one ``stop_gradient`` are one red row; a
``nan`` or an unexplained ``None`` is always its own row. Cut rows and problems that differ
only in their variable become one row with a count. ``problems_only`` keeps only the
variables a problem names.
"""

from __future__ import annotations

import dataclasses
import enum
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from gradscope._src.report import style
from gradscope._src.results import report as m
from gradscope._src.results import words
from gradscope._src.results.facts import CutPoint, VariableFacts
from gradscope._src.results.finding import Finding
from gradscope._src.results.fix import Fix

#: ``--group auto`` collapses layers from this many variables on.
AUTO_GROUP_FROM = 40
#: Cut rows are grouped from this many identical ones on (fewer read better one per line).
CUT_GROUP_FROM = 3


class Group(str, enum.Enum):
    """``--group``: how variables are gathered into rows."""

    AUTO = "auto"  # ``layer`` for big models (AUTO_GROUP_FROM variables or more), else ``none``
    LAYER = "layer"
    NONE = "none"


@dataclass(frozen=True)
class Row:
    """One matrix row: a variable, or a run of variables collapsed into one."""

    label: str  # the variable's name, or ``first … last`` of a run
    detail: str  # the shape, or ``12 variables`` / ``12 in 5 layers``
    variables: tuple[str, ...]
    cells: tuple[str, ...]  # one per loss
    problems: tuple[bool, ...]  # one per loss: the pair is a new problem
    statuses: tuple[str, ...]  # one per loss
    never_trained: bool = False
    norms: tuple[tuple[float, ...], ...] = ()  # one per loss: the norms of its variables
    attributes: tuple[str, ...] = ()  # per variable: the attribute the user's code reaches it by


def layer_of(variable: str) -> str:
    """The layer (module, name scope) a variable belongs to: its name up to the last ``/``.

    Example:
        >>> layer_of("conv_pw_1_bn/moving_mean"), layer_of("w")
        ('conv_pw_1_bn', 'w')
    """
    return variable.rsplit("/", 1)[0] if "/" in variable else variable


def labelled(name: str, attribute: str = "") -> str:
    """A variable's name with the attribute the user's code reaches it by, when it has one
    that says more (``detector/dense_3/kernel (box_head.kernel)``)."""
    return f"{name} ({attribute})" if attribute else name


def owner_of(attribute: str) -> str:
    """The layer part of an attribute (``heads[1]`` of ``heads[1].kernel``); ``""`` for a
    variable held by an attribute of its own (``scale``)."""
    return attribute.rsplit(".", 1)[0] if "." in attribute else ""


def group_label(names: Sequence[str], attributes: Sequence[str] = ()) -> tuple[str, str]:
    """The label and detail of a run of variables collapsed into one row, in every table:
    ``dense_3/*`` and ``2 variables`` for one layer, ``dense … dense_59`` and ``120 in 60
    layers`` for several; with the attributes of their layers (``(box_head)``, ``(blocks[0] …
    blocks[59])``) when every one has one.

    Example:
        >>> group_label(["d/kernel", "d/bias"], ["box_head.kernel", "box_head.bias"])
        ('d/* (box_head)', '2 variables')
    """
    layers = list(dict.fromkeys(layer_of(n) for n in names))
    if len(layers) == 1:
        label, detail = f"{layers[0]}/*", f"{len(names)} variables"
    else:
        label, detail = f"{layers[0]} … {layers[-1]}", f"{len(names)} in {len(layers)} layers"
    held = owners(names, attributes)
    return (f"{label} ({held})" if held else label), detail


def owners(names: Sequence[str], attributes: Sequence[str]) -> str:
    """The attributes of the layers of a group of variables (``box_head``, ``blocks[0] …
    blocks[59]``), when every variable has one; else ``""``."""
    layers = list(dict.fromkeys(owner_of(a) for a in attributes))
    if len(attributes) != len(names) or not all(layers):
        return ""
    return layers[0] if len(layers) == 1 else f"{layers[0]} … {layers[-1]}"


def problem_pairs(report: m.Report) -> set[tuple[str | None, str | None]]:
    """``(loss, variable)`` of every new problem (loss None: never-trained)."""
    return {(p.loss, p.variable) for p in report.failures}


def grouping(report: m.Report, group: str | Group) -> bool:
    """Whether variables are collapsed: ``layer``, or ``auto`` on a big model."""
    mode = Group(group)
    return mode is Group.LAYER or (mode is Group.AUTO and len(report.variables) >= AUTO_GROUP_FROM)


def matrix_rows(
    report: m.Report, group: str | Group = Group.AUTO, problems_only: bool = False
) -> list[Row]:
    """The rows of the matrix, in the report's variable order."""
    wrong = problem_pairs(report)
    singles = [_single(report, v, wrong) for v in report.variables]
    if problems_only:
        named = {variable for _, variable in wrong}
        return [row for row in singles if row.variables[0] in named]
    if not grouping(report, group):
        return singles
    rows: list[Row] = []
    run: list[Row] = []

    def flush() -> None:
        rows.extend([_collapse(run)] if len(run) > 1 else run)
        run.clear()

    for row in singles:
        if not _collapsible(row) or (run and not _same(run[0], row)):
            flush()
        if _collapsible(row):
            run.append(row)
        else:
            rows.append(row)
    flush()
    return rows


def _single(
    report: m.Report, variable: VariableFacts, wrong: set[tuple[str | None, str | None]]
) -> Row:
    name = variable.name
    pairs = [loss.pair(name) for loss in report.losses]
    return Row(
        label=labelled(name, variable.attribute),
        detail=style.shape(variable.shape),
        variables=(name,),
        cells=tuple(style.cell(p) for p in pairs),
        problems=tuple((loss.name, name) in wrong for loss in report.losses),
        statuses=tuple(p.status for p in pairs),
        never_trained=(None, name) in wrong,
        norms=tuple((p.norm,) if p.norm is not None else () for p in pairs),
        attributes=(variable.attribute,),
    )


def _collapsible(row: Row) -> bool:
    """A row that may join a run of rows like it: not a ``nan`` or an unexplained ``None``
    (each asks to be looked at on its own)."""
    return not any(s in (m.NAN, m.UNEXPLAINED) for s in row.statuses)


def _same(a: Row, b: Row) -> bool:
    """Rows that read the same: statuses, problems and never-trained alike."""
    return (a.statuses, a.problems, a.never_trained) == (b.statuses, b.problems, b.never_trained)


def _collapse(run: Sequence[Row]) -> Row:
    names = [name for r in run for name in r.variables]
    label, detail = group_label(names, [a for r in run for a in r.attributes if a])
    losses = range(len(run[0].cells))
    norms = tuple(tuple(x for r in run if r.norms for x in r.norms[i]) for i in losses)
    cells = tuple(group_cell([r.cells[i] for r in run], norms[i]) for i in losses)
    first = run[0]
    return Row(label, detail, tuple(names), cells, first.problems, first.statuses,
               first.never_trained, norms, tuple(a for r in run for a in r.attributes))  # fmt: skip


def group_cell(texts: Sequence[str], norms: Sequence[float]) -> str:
    """A collapsed cell: the status word, the smallest and largest norm of an ``ok`` run (a
    group hides no vanishing or exploding member), ``✂`` when any of its pairs was partly cut.

    Example:
        >>> group_cell(["ok 1.00e-07", "ok 3.00e-08"], [1e-7, 3e-8])
        'ok 3.0e-08…1.0e-07'
    """
    status = texts[0].split(" ")[0]
    if status == "ok" and norms:
        low, high = min(norms), max(norms)
        status += f" {low:.1e}…{high:.1e}" if low != high else f" {style.number(low)}"
    return status + (" ✂" if any(t.endswith("✂") for t in texts) else "")


@dataclass(frozen=True)
class CutRow:
    """A row of *Where the gradient was cut*: one pair, or several cut the same way."""

    loss: str
    variables: tuple[str, ...]
    status: str
    where: str

    @property
    def label(self) -> str:
        """The variable, or ``first (+N)`` for a group (``where`` names the last)."""
        if len(self.variables) == 1:
            return self.variables[0]
        return f"{self.variables[0]} (+{len(self.variables) - 1})"


def cut_rows(
    report: m.Report, group: str | Group = Group.AUTO, problems_only: bool = False
) -> list[CutRow]:
    """Cut rows in report order. Rows of one loss with the same status whose cut points are
    the same ops at the same lines (``StopGradient_6`` and ``StopGradient_7`` made by one line
    of a loop count as the same) are one row when there are ``CUT_GROUP_FROM`` or more of
    them, unless ``group`` is ``none``."""
    wrong = problem_pairs(report)
    named = {variable for _, variable in wrong}
    found: dict[tuple[object, ...], list[tuple[str, tuple[CutPoint, ...]]]] = {}
    statuses: dict[tuple[object, ...], tuple[str, str]] = {}
    for loss, pair in report.pairs():
        if not pair.cut_points:
            continue
        if problems_only and pair.variable not in named:
            continue
        status = pair.status if not m.has_gradient(pair.status) else f"{pair.status}, partly cut"
        same = tuple((c.op, c.kind, c.source) for c in pair.cut_points)
        key: tuple[object, ...] = (loss.name, status, same)
        if Group(group) is Group.NONE:
            key = (loss.name, pair.variable)
        found.setdefault(key, []).append((pair.variable, pair.cut_points))
        statuses[key] = (loss.name, status)
    rows: list[CutRow] = []
    for key, members in found.items():
        name, status = statuses[key]
        if len(members) < CUT_GROUP_FROM:
            rows += [CutRow(name, (v,), status, _where(cuts)) for v, cuts in members]
        else:
            variables = tuple(v for v, _ in members)
            where = _where_many([c for _, c in members])
            # the range, unless the fix below the cuts names it (said once: ``cut_fixes``)
            if report.loss(name).pair(variables[0]).fix is None:
                where += f", for {variables[0]} … {variables[-1]}"
            rows.append(CutRow(name, variables, status, where))
    order = {name: i for i, name in enumerate(v.name for v in report.variables)}
    losses = {loss.name: i for i, loss in enumerate(report.losses)}
    return sorted(rows, key=lambda r: (losses.get(r.loss, 0), order.get(r.variables[0], 0)))


def _where(cuts: Sequence[CutPoint]) -> str:
    return words.cuts_text(cuts)


def _where_many(cuts: Sequence[Sequence[CutPoint]]) -> str:
    """The cut points of a group: as one row's when the nodes are the same too, else the
    first node with a count of the others (``StopGradient_6 and 18 more (StopGradient) at
    model.py:16``)."""
    if all(list(c) == list(cuts[0]) for c in cuts):
        return _where(cuts[0])
    parts = []
    for i, first in enumerate(cuts[0]):
        nodes = {c[i].node for c in cuts if i < len(c)}
        more = f" and {len(nodes) - 1} more" if len(nodes) > 1 else ""
        parts.append(words.cut_text(first, node=f"{first.node}{more}"))
    return "; ".join(parts)


@dataclass(frozen=True)
class ProblemRow:
    """A finding, or several that differ only in their variable (one cut, one pattern)."""

    finding: Finding
    variables: tuple[str, ...]

    @property
    def message(self) -> str:
        """The first finding's message, with how many more are like it and which."""
        if len(self.variables) < 2:
            return self.finding.message
        more = len(self.variables) - 1
        return (
            f"{self.finding.message} (and {more} more like it: {self.variables[1]}"
            f"{' … ' + self.variables[-1] if more > 1 else ''})"
        )


def problem_rows(findings: Sequence[Finding], group: str | Group = Group.AUTO) -> list[ProblemRow]:
    """Findings in order; those of one file, loss, kind, line and cut points gathered into
    one row when there are ``CUT_GROUP_FROM`` or more (unless ``group`` is ``none``)."""
    found: dict[tuple[object, ...], list[Finding]] = {}
    for i, f in enumerate(findings):
        cuts = tuple((c.op, c.kind, c.source) for c in f.cut_points)
        key: tuple[object, ...] = (f.known, f.file, f.loss, f.kind, f.location.line, cuts)
        found.setdefault(key if Group(group) is not Group.NONE else (i,), []).append(f)
    rows: list[ProblemRow] = []
    for members in found.values():
        if len(members) < CUT_GROUP_FROM:
            rows += [ProblemRow(f, (f.variable or "",)) for f in members]
        else:
            rows.append(ProblemRow(members[0], tuple(f.variable or "" for f in members)))
    return rows


def fix_groups(items: Iterable[tuple[str, Fix | None]]) -> list[tuple[tuple[str, ...], Fix]]:
    """Each fix once, with the names it is for (``b/kernel, b/bias``), in the order first
    seen: fixes of one kind whose words are the same, or differ only in the name they are
    for and the line they go at, are one fix, said once (its words name the first, and
    every line: ``at ints.py:4 (`steps`), ints.py:5 (`count`)``). A report of 10,000
    variables with 100 unread says its one fix once, naming the 100, whatever the format."""
    exact: dict[tuple[str, str], int] = {}
    alike: dict[tuple[str, str], int] = {}
    groups: list[tuple[list[str], list[Fix]]] = []
    for name, fix in items:
        if fix is None:
            continue
        plain = fix.text.replace(f"`{name}`", "`…`") if name else fix.text
        shape = (fix.kind, plain.replace(fix.where, "…") if fix.where else plain)
        at = exact.get((fix.kind, fix.text), alike.get(shape))
        if at is None:
            at = len(groups)
            groups.append(([], []))
        exact.setdefault((fix.kind, fix.text), at)
        alike.setdefault(shape, at)
        names, fixes = groups[at]
        if name not in names:
            names.append(name)
            fixes.append(fix)
    return [(tuple(names), _merged(names, fixes)) for names, fixes in groups]


def _merged(names: Sequence[str], fixes: Sequence[Fix]) -> Fix:
    """The first fix said of all the group's variables: its words name ``each of these N
    variables`` where they named the first, and every line the fixes go at, each with its
    variable (``at ints.py:4 (`steps`) and ints.py:5 (`count`)``)."""
    first = fixes[0]
    named = [n for n in names if n]
    text = first.text
    others_named = any(f"`{n}`" in text for n in named[1:])  # its words name them already
    if len(named) > 1 and f"`{named[0]}`" in text and not others_named:
        start = text.index(f"`{named[0]}`")
        each = f"each of these {len(named)} variables"
        if start == 0 or text[:start].endswith(". "):
            each = each.capitalize()
        text = text[:start] + each + text[start + len(named[0]) + 2 :]
    lines = list(dict.fromkeys(f.where for f in fixes))
    if len(lines) > 1 and first.where and first.where in text:
        pairs = [f"{f.where} (`{n}`)" for n, f in zip(names, fixes, strict=True) if n]
        if len(pairs) > 3:
            at = f"{pairs[0]} … {pairs[-1]} ({len(pairs)} lines)"
        else:
            at = ", ".join(pairs[:-1]) + f" and {pairs[-1]}"
        text = text.replace(first.where, at, 1)
    return first if text == first.text else dataclasses.replace(first, text=text)


def cut_fixes(report: m.Report, problems_only: bool = False) -> list[tuple[tuple[str, ...], Fix]]:
    """The fixes of the pairs *Where the gradient was cut* lists, each said once with the
    variables it covers (``fix_groups``): 200 variables cut by one line are one fix."""
    named = {variable for _, variable in problem_pairs(report)} if problems_only else None
    return fix_groups((pair.variable, pair.fix) for _, pair in report.pairs()
                      if pair.cut_points and (named is None or pair.variable in named))  # fmt: skip


#: A fix covering more variables than this names the first and the last, and the count.
FIX_NAMES = 6


def covered_names(names: Sequence[str]) -> str:
    """The variables a fix covers, in a few words: all of them up to ``FIX_NAMES``, else
    ``conv1/kernel … conv_pw_13_bn/beta, 81 variables`` (a screenful per cause, whatever the
    model's size; the rows above name each)."""
    named = [n for n in names if n]
    if len(named) <= FIX_NAMES:
        return ", ".join(named)
    return f"{named[0]} … {named[-1]}, {len(named)} variables"


def fix_line(names: Sequence[str], fix: Fix) -> str:
    """A fix said once for what it covers: ``fix (b/kernel, b/bias): ...``."""
    covered = f" ({covered_names(names)})" if any(names) else ""
    return f"fix{covered}: {fix.sentence()}"
