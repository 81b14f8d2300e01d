"""The terminal tables of every result: inspect's losses x variables matrix with where the
gradient was cut and the problems; check's matrices, problems, specs and verdict; diff's two
losses side by side or the cosine matrix; run's watched calls, each source's status and norm."""

from __future__ import annotations

import io
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from rich.cells import cell_len
from rich.console import Console, ConsoleOptions, Group, RenderResult
from rich.measure import Measurement
from rich.rule import Rule
from rich.table import Table
from rich.text import Text

from gradscope._src.report import diff_style as ds
from gradscope._src.report import grid, rows, style
from gradscope._src.report.formats import assert_never
from gradscope._src.report.grid import Whole
from gradscope._src.report.rows import problem_rows
from gradscope._src.results import report as m
from gradscope._src.results import run as rr
from gradscope._src.results import words
from gradscope._src.results.check import CheckResult
from gradscope._src.results.diff import BOTH, REACHES, Diff, DiffMatrix, DiffReport
from gradscope._src.results.finding import Finding
from gradscope._src.results.fix import Fix

if TYPE_CHECKING:
    from gradscope._src.report.formats import Result


def render(
    result: Result,
    *,
    color: bool = False,
    width: int = 120,
    group: str = "auto",
    problems_only: bool = False,
    summary_only: bool = False,
) -> str:
    """Any result as a terminal table (no trailing blanks on any line); ``group`` and
    ``problems_only`` as ``--group`` and ``--problems``, ``summary_only`` for ``check``."""
    shown = renderable(result, group=group, problems_only=problems_only, summary_only=summary_only)
    return to_text(shown, color=color, width=width)


def renderable(
    result: Result, *, group: str = "auto", problems_only: bool = False, summary_only: bool = False
) -> Group:
    """Any result as rich renderables (also what its ``__rich__`` returns)."""
    match result:
        case m.Report():
            return report_renderable(result, group=group, problems_only=problems_only)
        case CheckResult():
            return check_renderable(
                result, summary_only=summary_only, group=group, problems_only=problems_only
            )
        case DiffReport():
            return diff_renderable(result)
        case DiffMatrix():
            return matrix_renderable(result)
        case rr.RunReport():
            return run_renderable(result, group, problems_only)
        case _:
            assert_never(result)


# -- inspect ---------------------------------------------------------------------------------


def _title(report: m.Report) -> Text:
    title = Text()
    title.append("gradscope", style="bold")
    title.append(f" · {report.name or report.spec}")
    if report.name:
        title.append(f" ({report.spec})", style="dim")
    where = report.device
    if report.distributed is not None:  # the devices are listed with the replicas
        d = report.distributed.distribution
        where = f"{d.strategy} ×{d.replicas}"
    title.append(f" · {report.framework} · {where}", style="dim")
    return title


class Lines:
    """Lines laid out for the console's width when printed (``grid``: no name is cut)."""

    def __init__(self, make: Callable[[int], list[Text]], title: str = "") -> None:
        self.make, self.title = make, title

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        if self.title:
            yield Text(self.title, style="bold")
        yield from self.make(options.max_width)


def _matrix(report: m.Report, group: str, problems_only: bool) -> Lines | Text:
    found = rows.matrix_rows(report, group, problems_only)
    if not found:
        return Text("no problems: every pair is as expected" if problems_only else "no variables")
    return Lines(lambda width: grid.lines(report, found, width))


def _cuts(report: m.Report, group: str, problems_only: bool) -> Lines | None:
    found = rows.cut_rows(report, group, problems_only)
    if not found:
        return None
    wrong = rows.problem_pairs(report)
    table = [
        [(r.loss, ""), (r.label, ""), (r.status, _status_style(r, wrong)), (r.where, "")]
        for r in found
    ]  # fmt: skip
    headers = ("loss", "variable", "status", "cut at")
    fixes = [Text(rows.fix_line(names, fix), style="green")
             for names, fix in rows.cut_fixes(report, problems_only)]  # fmt: skip

    def lines(width: int) -> list[Text]:  # each fix once, below the cuts, naming its variables
        return grid.columns(headers, table, width) + fixes

    return Lines(lines, "Where the gradient was cut")


def _unshown(finding: Finding) -> Fix | None:
    """A finding's fix, unless *Where the gradient was cut* shows it under its cut already."""
    return None if finding.cut_points else finding.fix


def _status_style(row: rows.CutRow, wrong: set[tuple[str | None, str | None]]) -> str:
    problem = any((row.loss, v) in wrong for v in row.variables)
    return style.cell_style(row.status.split(",")[0], problem)


def _nan_origins(report: m.Report) -> Lines | None:
    rows = style.nan_rows(report)
    if not rows:
        return None
    table = [
        [(loss, ""), (variable, ""), (what, style.STATUS_STYLE[m.NAN]), (where, "")]
        for loss, variable, what, where in rows
    ]
    headers = ("loss", "variable", "first non-finite value", "at")
    return Lines(lambda width: grid.columns(headers, table, width), "Where NaN/Inf first appeared")


def _numeric(report: m.Report) -> Lines | None:
    rows = style.numeric_rows(report)
    if not rows:
        return None
    table = [
        [(loss, ""), (variable, ""), (verdict, style.VERDICT_STYLE[verdict]), (error, ""),
         (coordinates, ""), (why, "")]
        for loss, variable, verdict, error, coordinates, why in rows
    ]  # fmt: skip
    headers = ("loss", "variable", "verdict", "error / tolerance", "coordinates", "why")
    return Lines(lambda width: grid.columns(headers, table, width), style.numeric_heading(report))


def _replicas(report: m.Report) -> Group | None:
    """Each replica's status and norm (``--strategy``), for the pairs where they can differ."""
    found = style.replica_rows(report)
    if not found:
        return None
    table = Table(box=None, header_style="bold")
    table.add_column("loss", overflow="fold")
    table.add_column("variable", overflow="fold")
    for replica in range(len(found[0][2])):
        table.add_column(f"replica {replica}", no_wrap=True)
    for loss, variable, cells in found:
        marks = [Text(text, style=style.STATUS_STYLE[status]) for text, status in cells]
        table.add_row(loss, variable, *marks)
    return Group(Text(style.replica_heading(report), style="bold"), table)


def _problems(report: m.Report, group: str = "auto") -> Lines | None:
    if not report.problems:
        return None
    found = report.findings()
    table = [
        [(f"{'known ' if r.finding.known else ''}{r.finding.kind}",
          "dim" if r.finding.known else "red"), (r.message, "")]
        for r in rows.problem_rows(found, group)
    ]  # fmt: skip

    def lines(width: int) -> list[Text]:
        return grid.columns(None, table, width) + _fix_lines(
            (str(f.variable or ""), _unshown(f)) for f in found
        )

    return Lines(lines, "Problems")


def _fix_lines(items: Iterable[tuple[str, Fix | None]]) -> list[Text]:
    """Each fix once, naming what it covers (``rows.fix_groups``)."""
    return [Text(rows.fix_line(names, fix), style="green") for names, fix in rows.fix_groups(items)]


def _notes(report: m.Report) -> Lines | None:
    """Each note after its loss; a loss too wide to leave the note room (a site's absolute
    path) puts the note below it, as the problems do."""
    found = style.note_rows(report)
    if not found:
        return None
    table: list[list[grid.Cell]] = [[(loss, "yellow"), (note, "")] for loss, note in found]
    return Lines(lambda width: grid.columns(None, table, width), "Notes")


def report_renderable(
    report: m.Report, *, problems: bool = True, group: str = "auto", problems_only: bool = False
) -> Group:
    """The report as rich renderables (also what ``Report.__rich__`` returns).

    ``problems=False`` leaves out the problems table (``check`` lists them once for all specs);
    ``group`` gathers variables into rows (``rows.Group``); ``problems_only`` keeps only the
    variables and cut points a problem names.
    """
    parts: list[Any] = [_title(report), Text(), _matrix(report, group, problems_only)]
    extras = (_cuts(report, group, problems_only), _nan_origins(report), _numeric(report),
              _replicas(report), _problems(report, group) if problems else None,
              _notes(report))  # fmt: skip
    for extra in extras:
        if extra is not None:
            parts += [Text(), extra]
    tone = "red" if report.failures else "green"
    parts += [Text(), Text(style.summary(report), style=f"bold {tone}")]
    return Group(*parts)


def to_text(renderable: Any, *, color: bool = False, width: int = 120) -> str:
    """Render any rich renderable to a string; ANSI colours only when ``color``."""
    buffer = io.StringIO()
    console = Console(
        file=buffer,
        width=width,
        force_terminal=color,
        force_jupyter=False,  # a string, also in a notebook (rich would display it there)
        color_system="standard" if color else None,
        no_color=not color,
        highlight=False,
        emoji=False,
    )
    console.print(renderable, crop=False)  # a name longer than the width is not cut
    # rich pads every cell to its column's width: a CI log or a diff gets no trailing blanks
    return "".join(line.rstrip() + "\n" for line in buffer.getvalue().splitlines())


# -- check -----------------------------------------------------------------------------------


def _header(result: CheckResult) -> Text:
    first = result.reports[0]
    text = Text()
    text.append("gradscope check", style="bold")
    text.append(f" · {result.checked()}")
    text.append(f" · {first.framework} · {first.device}", style="dim")
    if result.baseline:
        text.append(f" · baseline {result.baseline}", style="dim")
    return text


def problems_table(findings: Sequence[Finding], group: str = "auto") -> Any:
    """One row per finding: new or known, kind, ``FILE:LINE`` and the message (below the rest
    when the terminal is too narrow for it beside them); alike ones gathered (``rows``)."""
    ordered = sorted(findings, key=lambda f: f.known)  # new ones first, order kept otherwise
    rows = [
        [("known", "dim") if r.finding.known else ("✗", "bold red"),
         (r.finding.kind, "dim" if r.finding.known else "red"),
         (f"{r.finding.file}:{r.finding.location.line}", "dim"), (r.message, "")]
        for r in problem_rows(ordered, group)
    ]  # fmt: skip
    fixes = [(str(f.variable or ""), f.fix) for f in ordered]
    return Lines(lambda width: grid.columns(None, rows, width, indent=0) + _fix_lines(fixes),
                 "Problems")  # fmt: skip


def _specs_table(result: CheckResult) -> Table:
    table = Table(title="Specs", title_justify="left", box=None, show_header=False,
                  title_style="bold", pad_edge=False)  # fmt: skip
    table.add_column("mark", no_wrap=True)
    table.add_column("spec", overflow="fold")
    table.add_column("summary", overflow="fold")
    for report in result.reports:
        failed = bool(report.failures)
        mark = Text("✗", style="bold red") if failed else Text("✓", style="green")
        table.add_row(mark, report.spec, style.summary(report))
    return table


def _fixed(result: CheckResult) -> Text:
    lines = [f"  {spec}: {kind} {loss or '-'} × {var or '-'}"
             for spec, loss, var, kind in result.fixed]  # fmt: skip
    return Text("Fixed since the baseline\n" + "\n".join(lines), style="green")


def check_renderable(
    result: CheckResult,
    *,
    summary_only: bool = False,
    group: str = "auto",
    problems_only: bool = False,
) -> Group:
    """The whole check result as rich renderables (also what ``CheckResult.__rich__`` returns).

    ``summary_only``: no matrices, only the problems, the specs and the verdict (what
    ``check --output`` prints to standard error).
    """
    several = len(result.reports) > 1
    parts: list[Any] = [_header(result), Text()] if several else []
    for report in result.reports:
        if summary_only or (several and not report.failures):
            continue
        if several:
            parts.append(Rule(report.spec, style="red", align="left"))
        shown = report_renderable(report, problems=False, group=group, problems_only=problems_only)
        parts += [shown, Text()]
    if result.problems:
        parts += [problems_table(result.findings(), group), Text()]
    if result.fixed:
        parts += [_fixed(result), Text()]
    if several or summary_only:
        parts += [_specs_table(result), Text()]
    tone = "green" if result.passed else "red"
    verdict = f"{result.verdict()} (exit code {int(result.exit_code)})"
    parts.append(Text(verdict, style=f"bold {tone}"))
    return Group(*parts)


# -- diff ------------------------------------------------------------------------------------


def _diff_title(report: m.Report, what: str) -> Text:
    title = Text()
    title.append("gradscope diff", style="bold")
    title.append(f" · {what} · {report.name or report.spec}")
    if report.name:
        title.append(f" ({report.spec})", style="dim")
    title.append(f" · {report.framework} · {report.device}", style="dim")
    return title


_CONFLICTS = "Pulling against each other (negative cosine, most negative first)"


def _section(title: str, table: Table | Whole) -> Group:
    """A bold title on its own line (a table's title would wrap at the table's width)."""
    return Group(Text(title, style="bold"), table)


def _diff_table() -> Table:
    return Table(box=None, header_style="bold")


def _side(pair: m.PairResult) -> Text:
    return Text(style.cell(pair), style=style.STATUS_STYLE[pair.status])


def _variables(result: DiffReport) -> Table:
    diff, a, b = result.diff, result.loss_a, result.loss_b
    table = Table(box=None, pad_edge=False, show_edge=False, header_style="bold")
    table.add_column("variable", no_wrap=True)
    table.add_column("shape", style="dim", no_wrap=True)
    table.add_column(f"A: {a.name}\n{style.number(a.value)}", no_wrap=True)
    table.add_column(f"B: {b.name}\n{style.number(b.value)}", no_wrap=True)
    table.add_column("cosine", justify="right", no_wrap=True)
    table.add_column("signs\nagree", justify="right", no_wrap=True)
    table.add_column("norm\nA/B", justify="right", no_wrap=True)
    for v in diff.variables:
        numbers: list[Any] = [Text("")] * 3
        if v.reach == BOTH:
            numbers = [
                Text(ds.cosine(v.cosine), style=ds.cosine_style(v.cosine)),
                ds.percent(v.sign_agreement),
                ds.ratio(v.norm_ratio),
            ]
        table.add_row(v.variable, style.shape(v.shape), _side(v.a), _side(v.b), *numbers)
    return table


class _Fitted:
    """The side-by-side table when it fits the width; else each variable's name on a line of
    its own (never shortened) with its cells below it, labelled."""

    def __init__(self, result: DiffReport) -> None:
        self.result = result

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        table = _variables(self.result)
        natural = Measurement.get(console, options.update_width(10_000), table).maximum
        if natural <= options.max_width:
            yield table
            return
        diff, a, b = self.result.diff, self.result.loss_a, self.result.loss_b
        yield Text(f"A: {a.name} = {style.number(a.value)} · B: {b.name} = "
                   f"{style.number(b.value)}", style="bold")  # fmt: skip
        for v in diff.variables:
            name = Text(f"{v.variable}  {style.shape(v.shape)}")
            name.no_wrap, name.overflow = True, "ignore"
            yield name
            line = Text("  A: ").append_text(_side(v.a)).append("  B: ").append_text(_side(v.b))
            if v.reach == BOTH:
                line.append(f"  cosine {ds.cosine(v.cosine)}", style=ds.cosine_style(v.cosine))
                line.append(f"  signs agree {ds.percent(v.sign_agreement)}")
                line.append(f"  norm A/B {ds.ratio(v.norm_ratio)}")
            yield line


def _reach(diff: Diff) -> Group | None:
    rows = [(r, v) for r in REACHES[1:] for v in diff.variables if v.reach == r]
    if not rows:
        return None
    located = any(v.cut_points for _, v in rows)
    table = _diff_table()
    for name in ("reach", "variable", "why", "cut at")[: 4 if located else 3]:
        table.add_column(name, overflow="fold", no_wrap=name in ("reach", "variable"))
    for reach, v in rows:
        cells: list[Any] = [ds.reach_label(diff, reach), v.variable, v.explanation or ""]
        if located:
            cells.append(Text(ds.sources(diff, v.variable), style="dim"))
        table.add_row(*cells)
    return _section("Who reaches what", table)


def _conflicts(diff: Diff) -> Group | None:
    if not diff.conflicts:
        return None
    table = _diff_table()
    for name in ("variable", "cosine", "signs agree", "norm A/B"):
        table.add_column(name, justify="left" if name == "variable" else "right", no_wrap=True)
    for v in diff.conflicts:
        cosine = Text(ds.cosine(v.cosine), style=ds.cosine_style(v.cosine))
        table.add_row(v.variable, cosine, ds.percent(v.sign_agreement), ds.ratio(v.norm_ratio))
    return _section(_CONFLICTS, Whole(table))


def diff_renderable(result: DiffReport) -> Group:
    """Two losses side by side as rich renderables (also ``DiffReport.__rich__``)."""
    diff = result.diff
    parts: list[Any] = [_diff_title(result.report, f"{diff.loss_a} vs {diff.loss_b}"), Text()]
    parts.append(_Fitted(result))
    for extra in (_reach(diff), _conflicts(diff)):
        if extra is not None:
            parts += [Text(), extra]
    parts += [Text(), Text(diff.whole_model(), style=f"bold {ds.cosine_style(diff.cosine)}")]
    parts += _diff_notes(result.report)  # before the summary, which stays the last line
    parts.append(Text(diff.summary(), style="bold"))
    return Group(*parts)


def _cosine_matrix(result: DiffMatrix) -> Table:
    table = Table(box=None, pad_edge=False, show_edge=False, header_style="bold")
    table.add_column("loss", no_wrap=True)
    for name in result.losses:
        table.add_column(name, justify="right", overflow="fold")
    for a in result.losses:
        cells = []
        for b in result.losses:
            value = result.cosine(a, b)
            tone = "dim" if a == b else ds.cosine_style(value)
            cells.append(Text(ds.cosine(value), style=tone))
        table.add_row(a, *cells)
    return table


def _pair_conflicts(result: DiffMatrix) -> Group | None:
    if not result.conflicts:
        return None
    table = _diff_table()
    for name in ("losses", "cosine", "shared", "most opposed variable"):
        table.add_column(name, overflow="fold", justify="right" if name == "cosine" else "left")
    for d in result.conflicts:
        worst = d.conflicts[0] if d.conflicts else None
        opposed = f"{worst.variable} ({ds.cosine(worst.cosine)})" if worst else "-"
        table.add_row(f"{d.loss_a} × {d.loss_b}",
                      Text(ds.cosine(d.cosine), style=ds.cosine_style(d.cosine)),
                      str(len(d.shared)), opposed)  # fmt: skip
    return _section(_CONFLICTS, Whole(table))


def matrix_renderable(result: DiffMatrix) -> Group:
    """The cosine matrix as rich renderables (also ``DiffMatrix.__rich__``)."""
    parts: list[Any] = [_diff_title(result.report, "every pair of losses"), Text()]
    if len(result.losses) < 2:
        parts += [Text("only one loss: nothing to compare", style="yellow"), Text()]
    else:
        caption = "whole-model cosine over the variables both losses reach; - : none shared"
        parts += [_cosine_matrix(result), Text(caption, style="dim")]
    extra = _pair_conflicts(result)
    if extra is not None:
        parts += [Text(), extra]
    parts += [*_diff_notes(result.report), Text(), Text(result.summary(), style="bold")]
    return Group(*parts)


def _diff_notes(report: m.Report) -> list[Text]:
    """Every note of the report the diff was made from (the same words as inspect's)."""
    rows = style.note_rows(report)
    return (
        [Text()] + [Text(f"note{f' ({loss})' if loss else ''}: {n}") for loss, n in rows]
        if rows
        else []
    )


# -- run -------------------------------------------------------------------------------------


#: How the program ended, in words.
ENDINGS = {
    rr.FINISHED: "the program ran to its end",
    rr.STOPPED: "stopped by --stop at step {next} of {site} (--steps {steps})",
    rr.RAISED: "the program raised (its traceback is above)",
    rr.INTERRUPTED: "interrupted",
    rr.EXITED: "the program exited with status {status}",
    rr.REPLACED: "the program replaced itself (exec): the exit status is the new program's",
}
#: How a ``gradscope.watch()`` block ended.
BLOCK_ENDINGS = {
    rr.FINISHED: "the block ran to its end",
    rr.RAISED: "the block raised",
    rr.INTERRUPTED: "interrupted",
}

#: A program that caught gradscope's stop (``except:``) and went on, in words.
CAUGHT = ("the program caught the stop and went on{how}: {refused} gradient call(s) at "
          "stopped sites raised the stop into it and were not made")  # fmt: skip


def heading(call: rr.CallResult) -> str:
    """``train.py:57 · GradientTape.gradient (function) · step 1 · loss 6.93e-01 at ...``."""
    step = f"step {call.step}" if call.step else "never run"
    text = f"{call.where} · {call.api} ({call.mode}) · {step}"
    if call.target_source or call.value is not None:
        text += f" · loss {style.number(call.value)}"
    if call.target_source:
        text += f" at {call.target_source}"
    if call.loss_scale is not None:
        text += f" · loss scale {style.number(call.loss_scale)} (norms unscaled)"
    if call.replica_values:
        text += f" · sum of {len(call.replica_values)} replicas"
    return text


def why(source: rr.SourceResult) -> str:
    """Where its NaN first appeared, its cut points, or its note."""
    if source.nan_origin is not None:
        where = source.nan_origin.source
        return words.origin_text(source.nan_origin) + (f" at {where}" if where else "")
    if source.cut_points:
        return words.cuts_text(source.cut_points)
    return source.note


def fixes(sources: Sequence[rr.SourceResult]) -> list[tuple[tuple[str, ...], Fix]]:
    """Each fix of a call's sources once, with the sources it is for (``rows.fix_groups``)."""
    return rows.fix_groups((s.name, s.fix) for s in sources)


@dataclass(frozen=True)
class _Row:
    """A source, or a run of consecutive sources that read the same, collapsed into one."""

    sources: tuple[rr.SourceResult, ...]
    problem: bool  # a problem of the report names one of them

    @property
    def first(self) -> rr.SourceResult:
        return self.sources[0]

    def label(self) -> str:
        """The source's name (and attribute), or a group's (``rows.group_label``)."""
        if len(self.sources) == 1:
            return rows.labelled(self.first.name, self.first.attribute)
        return rows.group_label(*self._names())[0]

    def shape(self) -> str:
        """The shape, or how many variables (and layers) a group holds."""
        if len(self.sources) == 1:
            return style.shape(self.first.shape)
        return rows.group_label(*self._names())[1]

    def _names(self) -> tuple[list[str], list[str]]:
        return [s.name for s in self.sources], [s.attribute for s in self.sources if s.attribute]

    def norm(self) -> str:
        """The norm, or a group's smallest and largest: a group hides no vanishing member."""
        s = self.first
        if not m.has_gradient(s.status):
            return "-"
        norms = [x.norm for x in self.sources if x.norm is not None]
        if len(self.sources) == 1 or not norms or min(norms) == max(norms):
            text = style.number(s.norm)
        else:
            text = f"{min(norms):.1e}…{max(norms):.1e}"
        return text + (" (sparse)" if any(x.sparse for x in self.sources) else "")


def source_rows(
    call: rr.CallResult, named: set[str], group: str = "auto", problems_only: bool = False
) -> list[_Row]:
    """The call's rows: only those worth a look with ``problems_only``; consecutive sources
    with the same status and the same explanation collapsed (``group``: ``layer``, or
    ``auto`` from ``rows.AUTO_GROUP_FROM`` sources on). A nan, an unexplained None and a
    source a problem names always keep a row of their own."""
    singles = [_Row((s,), s.name in named) for s in call.sources]
    if problems_only:
        singles = [r for r in singles if r.problem or _worth_a_look(r.first)]
    mode = rows.Group(group)
    if not (mode is rows.Group.LAYER or (mode is rows.Group.AUTO and
                                         len(call.sources) >= rows.AUTO_GROUP_FROM)):  # fmt: skip
        return singles
    out: list[_Row] = []
    for row in singles:
        last = out[-1] if out else None
        if last is not None and _joins(last, row):
            out[-1] = _Row(last.sources + row.sources, False)
        else:
            out.append(row)
    return out


def _worth_a_look(s: rr.SourceResult) -> bool:
    return s.status != m.OK or bool(s.cut_points) or s.trainable_changed


def _joins(run: _Row, row: _Row) -> bool:
    a, b = run.first, row.first
    return (
        not run.problem
        and not row.problem
        and a.status == b.status
        and a.status not in (m.NAN, m.UNEXPLAINED)
        and why(a) == why(b)
        and not a.replicas
        and not b.replicas
        and a.trainable_changed == b.trainable_changed
    )


def _call(
    call: rr.CallResult, named: set[str], group: str = "auto", problems_only: bool = False
) -> Group:
    found = source_rows(call, named, group, problems_only)
    parts: list[Any] = [Text(heading(call), style="bold")]
    hidden = len(call.sources) - sum(len(r.sources) for r in found)
    if found:
        parts.append(Lines(lambda width: _call_table(call, found, width, hidden)))
    elif hidden:
        parts.append(_hidden(hidden))
    shown = [s for r in found for s in r.sources]
    parts += _fix_lines((s.name, s.fix) for s in shown)
    parts += [Text(f"note: {n}", style="dim") for n in call.notes]
    return Group(*parts)


def _hidden(count: int) -> Text:
    return Text(f"({count} more source{'s' if count != 1 else ''} ok, not shown: --problems)",
                style="dim")  # fmt: skip


def _call_table(call: rr.CallResult, found: list[_Row], width: int, hidden: int) -> list[Text]:
    """The rows, their explanation last. An explanation several rows share, or every one
    when the width leaves the column no room, is written once below the table as ``[n]``."""
    replicas = [f"replica {r}" for r in range(len(call.replica_values))]
    fixed: list[list[grid.Cell]] = []
    for r in found:
        s = r.first
        each = [(style.replica_cell(x.status, x.norm), style.STATUS_STYLE[x.status])
                for x in s.replicas]  # fmt: skip
        each += [("", "")] * (len(replicas) - len(each))
        fixed.append([(r.label(), "red" if r.problem else ""), (r.shape(), "dim"),
                      (s.status, style.STATUS_STYLE.get(s.status, "")), (r.norm(), ""),
                      *each])  # fmt: skip
    heads = ("source", "shape", "status", "norm", *replicas)
    lead = sum(max(cell_len(h), *(cell_len(row[i][0]) for row in fixed)) + grid.GAP
               for i, h in enumerate(heads))  # fmt: skip
    texts = [why(r.first) for r in found]
    narrow = width - lead < grid.MIN_LAST
    headers = (*heads, "why" if narrow else "cut at / why")
    notes: list[str] = []
    for text in texts:
        if text and text not in notes and (narrow or texts.count(text) > 1):
            notes.append(text)
    cells = [[*row, (f"[{notes.index(t) + 1}]" if t in notes else t, "")]
             for row, t in zip(fixed, texts, strict=True)]  # fmt: skip
    out = grid.columns(headers, cells, width, indent=0, min_last=3 if narrow else grid.MIN_LAST,
                       names_first=True)  # fmt: skip
    out += [_hidden(hidden)] if hidden else []
    for n, text in enumerate(notes, 1):
        out += grid.columns(None, [[(f"[{n}]", "dim"), (text, "")]], width, indent=0)
    return out


def named_in(found: Sequence[Finding], call: rr.CallResult) -> set[str]:
    """The sources of ``call`` a run's finding names: each keeps a row of its own."""
    return {str(f.variable) for f in found if _of_call(f, call)}


def _of_call(finding: Finding, call: rr.CallResult) -> bool:
    """Whether a run's finding is about ``call``: at its site, about its label (its api, line
    and step: ``RunReport.findings``)."""
    return (finding.where, finding.loss) == (call.where, call.label)


def unshown_run_fixes(
    report: rr.RunReport, found: Sequence[Finding]
) -> list[tuple[tuple[str, ...], Fix]]:
    """The fixes of findings about no source of their call (an untracked variable the call
    read and did not ask for), each once: a source's fix is shown under its call already."""
    sources = {(c.where, c.label, s.name) for c in report.calls for s in c.sources
               if s.fix is not None}  # fmt: skip
    return rows.fix_groups((str(f.variable), f.fix) for f in found
                           if (f.where, f.loss, f.variable) not in sources)  # fmt: skip


def _run_problems(found: Sequence[Finding]) -> Table:
    """One row per site and kind, naming its sources, and how many problems it stands for
    when several (``unexpected-none ×2``: the rows add up to the summary's count; the
    messages are in the JSON report)."""
    grouped: dict[tuple[str, str], list[str]] = {}
    for f in found:
        grouped.setdefault((f.kind, f.where), []).append(str(f.variable))
    table = Table(title="Problems", title_justify="left", box=None, header_style="bold",
                  title_style="bold")  # fmt: skip
    for name in ("kind", "site", "sources"):
        table.add_column(name, overflow="fold")
    for (kind, site), names in grouped.items():
        count = f" ×{len(names)}" if len(names) > 1 else ""
        table.add_row(Text(f"{kind}{count}", style="red"), site, ", ".join(names))
    return table


def ending(report: rr.RunReport) -> str:
    """How the program ended, and with ``--stop`` where it was stopped, what the program
    did with the stop, and the call sites seen (a stopped run's verdict is never a bare
    "0 problems", nor "ran to its end" when its later gradient calls were refused)."""
    stop = report.stop
    site = stop.site if stop is not None else "a call site"
    endings = BLOCK_ENDINGS if report.entry == rr.WATCH else ENDINGS
    text = endings[report.outcome].format(steps=report.steps, status=report.exit_status,
                                          site=site, next=report.steps + 1)  # fmt: skip
    if report.signal is not None:
        text += f" ({report.signal})"
    if stop is None:
        return text
    if not stop.caught:
        text += ": the rest of the program did not run, so nothing in it was watched"
    else:
        caught = CAUGHT.format(how=" to its end" if stop.finished else "", refused=stop.refused)
        if report.outcome != rr.STOPPED:
            text += f" · it had been stopped by --stop at {site}"
        text += f"; {caught}"
    return f"{text} · call sites seen: {', '.join(stop.sites)}"


def run_summary(report: rr.RunReport) -> str:
    """``2 call(s) at 1 site(s) · 1 problem · the program ran to its end``: the calls, the
    findings, how the program ended."""
    sites = len(list(report.sites()))
    count = len(report.findings())
    text = (f"{len(report.calls)} call(s) at {sites} site(s) · "
            f"{count} problem{'s' if count != 1 else ''}")  # fmt: skip
    return f"{text} · {ending(report)}"


def run_tone(report: rr.RunReport) -> str:
    """The verdict's colour: red with a failing exit code; yellow for a run ``--stop``
    stopped (what did not run was not watched); green only for a program watched to its
    end."""
    if report.exit_code:
        return "red"
    return "yellow" if report.outcome == rr.STOPPED else "green"


def run_renderable(report: rr.RunReport, group: str = "auto", problems_only: bool = False) -> Group:
    title = Text()
    title.append(f"gradscope {report.entry}", style="bold")
    title.append(f" · {' '.join(report.argv) if report.argv else report.program}")
    where = report.device
    if report.devices:
        where = f"{len(report.devices)} replicas on {', '.join(report.devices)}"
    title.append(f" · {report.framework} · {where}", style="dim")
    parts: list[Any] = [title]
    if not report.calls:
        parts += [Text(), Text("No gradient call was made.")]
    found = report.findings()
    for call in report.calls:
        parts += [Text(), _call(call, named_in(found, call), group, problems_only)]
    if found:
        parts += [Text(), _run_problems(found)]
        parts += [Text(rows.fix_line(names, fix), style="green")
                  for names, fix in unshown_run_fixes(report, found)]  # fmt: skip
    parts += [Text(f"note: {n}", style="dim") for n in report.notes]
    parts += [Text(), Text(run_summary(report), style=f"bold {run_tone(report)}")]
    return Group(*parts)
