"""The terminal table of ``gradscope run``: per watched call, each source's status and norm."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from rich.cells import cell_len
from rich.console import Group
from rich.table import Table
from rich.text import Text

from gradscope.report import grid, rows, style
from gradscope.report.table import Lines, to_text
from gradscope.results import report as m
from gradscope.results import run as rr
from gradscope.results import words
from gradscope.results.fix import Fix

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
    """``train.py:57 · GradientTape.gradient (function) · step 1 · target 6.93e-01 at ...``."""
    step = f"step {call.step}" if call.step else "never run"
    text = f"{call.where} · {call.api} ({call.mode}) · {step}"
    if call.target_source or call.value is not None:
        text += f" · target {style.number(call.value)}"
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


def fixes(sources: Sequence[rr.SourceResult]) -> list[tuple[str, Fix]]:
    """Each fix of a call's sources once, with the sources it is for (``b/kernel, b/bias``):
    sources fixed the same way at the same line share one (its words name the first)."""
    found: dict[tuple[str, str], tuple[list[str], Fix]] = {}
    for s in sources:
        if s.fix is not None:
            found.setdefault((s.fix.kind, s.fix.where), ([], s.fix))[0].append(s.name)
    return [(", ".join(names), fix) for names, fix in found.values()]


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


def _rows(call: rr.CallResult, named: set[str], group: str, problems_only: bool) -> list[_Row]:
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
    found = _rows(call, named, group, problems_only)
    parts: list[Any] = [Text(heading(call), style="bold")]
    hidden = len(call.sources) - sum(len(r.sources) for r in found)
    if found:
        parts.append(Lines(lambda width: _table(call, found, width, hidden)))
    elif hidden:
        parts.append(_hidden(hidden))
    shown = [s for r in found for s in r.sources]
    parts += [Text(f"fix ({names}): {fix.sentence()}", style="green")
              for names, fix in fixes(shown)]  # fmt: skip
    parts += [Text(f"note: {n}", style="dim") for n in call.notes]
    return Group(*parts)


def _hidden(count: int) -> Text:
    return Text(f"({count} more source{'s' if count != 1 else ''} ok, not shown: --problems)",
                style="dim")  # fmt: skip


def _table(call: rr.CallResult, found: list[_Row], width: int, hidden: int) -> list[Text]:
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


def _problems(report: rr.RunReport) -> Table:
    """One row per site and kind, naming its sources (the messages are in the JSON report)."""
    grouped: dict[tuple[str, str], list[str]] = {}
    for p in report.problems:
        grouped.setdefault((p.kind, p.where), []).append(p.variable)
    table = Table(title="Problems", title_justify="left", box=None, header_style="bold",
                  title_style="bold")  # fmt: skip
    for name in ("kind", "site", "sources"):
        table.add_column(name, overflow="fold")
    for (kind, site), names in grouped.items():
        table.add_row(Text(kind, style="red"), site, ", ".join(names))
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


def summary(report: rr.RunReport) -> str:
    sites = len(list(report.sites()))
    count = len(report.problems)
    text = (f"{len(report.calls)} call(s) at {sites} site(s) · "
            f"{count} problem{'s' if count != 1 else ''}")  # fmt: skip
    return f"{text} · {ending(report)}"


def tone(report: rr.RunReport) -> str:
    """The verdict's colour: red with a failing exit code; yellow for a run ``--stop``
    stopped (what did not run was not watched); green only for a program watched to its
    end."""
    if report.exit_code:
        return "red"
    return "yellow" if report.outcome == rr.STOPPED else "green"


def renderable(report: rr.RunReport, group: str = "auto", problems_only: bool = False) -> Group:
    title = Text()
    title.append(f"gradscope {report.entry}", style="bold")
    title.append(f" · {' '.join(report.argv) if report.argv else report.program}")
    where = report.device
    if report.devices:
        where = f"{len(report.devices)} replicas on {', '.join(report.devices)}"
    title.append(f" · TensorFlow {report.tensorflow} · {where}", style="dim")
    parts: list[Any] = [title]
    if not report.calls:
        parts += [Text(), Text("No gradient call was made.")]
    for call in report.calls:
        named = {p.variable for p in report.problems if (p.site, p.step) == (call.site, call.step)}
        parts += [Text(), _call(call, named, group, problems_only)]
    if report.problems:
        parts += [Text(), _problems(report)]
    parts += [Text(f"note: {n}", style="dim") for n in report.notes]
    parts += [Text(), Text(summary(report), style=f"bold {tone(report)}")]
    return Group(*parts)


def render(
    report: rr.RunReport,
    *,
    color: bool = False,
    width: int = 120,
    group: str = "auto",
    problems_only: bool = False,
) -> str:
    """The run report as a terminal table (``group`` and ``problems_only`` as ``inspect``'s
    ``--group`` and ``--problems``)."""
    return to_text(renderable(report, group, problems_only), color=color, width=width)
