"""Markdown of every result, for pull-request comments and job summaries: inspect's matrix
and cut points; check's verdict, every problem with its line and each spec folded in a
``<details>`` block; diff's two losses or the cosine matrix; run's watched calls."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from gradscope._src.report import diff_style as ds
from gradscope._src.report import mermaid, style
from gradscope._src.report.formats import assert_never
from gradscope._src.report.md import code, html, prose
from gradscope._src.report.rows import (
    covered_names,
    cut_fixes,
    cut_rows,
    fix_groups,
    problem_rows,
)
from gradscope._src.report.table import (
    ending,
    fixes,
    heading,
    named_in,
    run_summary,
    source_rows,
    unshown_run_fixes,
    why,
)
from gradscope._src.results import report as m
from gradscope._src.results import run as rr
from gradscope._src.results.check import CheckResult
from gradscope._src.results.diff import BOTH, REACHES, Diff, DiffMatrix, DiffReport
from gradscope._src.results.finding import Finding
from gradscope._src.results.fix import Fix

if TYPE_CHECKING:
    from gradscope._src.report.formats import Result


def render(result: Result, *, color: bool = False, width: int = 120) -> str:
    """Any result as a Markdown document."""
    match result:
        case m.Report():
            return report_document(result)
        case CheckResult():
            return check_document(result)
        case DiffReport():
            return diff_document(result)
        case DiffMatrix():
            return matrix_document(result)
        case rr.RunReport():
            return run_document(result)
        case _:
            assert_never(result)


# -- inspect ---------------------------------------------------------------------------------


_ICON = {m.OK: "✅", m.ZERO: "🟡", m.NAN: "🟥"}


def escape(text: str) -> str:
    """Prose for a table cell: one line, its code spans kept, the rest escaped (``md``)."""
    return prose(text, table=True)


_escape = escape


def _cell(pair: m.PairResult, problem: bool | None = None) -> str:
    """A matrix cell with its icon: ❌ for a problem, a plain ▫️ for a ``None`` that is none
    (``problem`` False: the spec declares it, or nobody minds); ⛔ when it is not known."""
    if problem:
        icon = "❌"
    elif m.is_none(pair.status):
        icon = "▫️" if problem is False else "⛔"
    else:
        icon = _ICON.get(pair.status, "▫️")
    return f"{icon} {_escape(style.cell(pair))}"


def _name(name: str, attribute: str) -> str:
    """A variable's name cell, with the attribute the user's code reaches it by."""
    named = code(name, table=True)
    return f"{named} ({code(attribute, table=True)})" if attribute else named


def matrix(report: m.Report) -> list[str]:
    from gradscope._src.report.rows import problem_pairs

    wrong = problem_pairs(report)
    header = ["variable", "shape"] + [code(loss.name, table=True) for loss in report.losses]
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for v in report.variables:
        cells = [_name(v.name, v.attribute), style.shape(v.shape)]
        cells += [_cell(loss.pair(v.name), (loss.name, v.name) in wrong) for loss in report.losses]
        lines.append("| " + " | ".join(cells) + " |")
    return lines


def sections(report: m.Report, *, problems: bool = True) -> list[str]:
    """The body shared by ``inspect`` and ``check`` markdown (``check`` lists problems once)."""
    lines = matrix(report)
    rows = cut_rows(report)  # identical cut points of a big model gathered, as in the table
    if rows:
        lines += ["", "**Where the gradient was cut**", ""]
        for r in rows:
            lines.append(f"- {code(r.loss)} ← {code(r.label)}: {r.status}, at {prose(r.where)}")
        lines += [fix_entry(names, fix) for names, fix in cut_fixes(report)]  # each once
    origins = style.nan_rows(report)
    if origins:
        lines += ["", "**Where NaN/Inf first appeared**", ""]
        lines += [
            f"- {code(loss)} ← {code(var)}: {prose(what)}{f', at {prose(at)}' if at else ''}"
            for loss, var, what, at in origins
        ]
    numeric = style.numeric_rows(report)
    if numeric:
        lines += ["", f"**{style.numeric_heading(report)}**", ""]
        lines += ["| loss | variable | verdict | error / tolerance | coordinates | why |",
                  "|---|---|---|---|---|---|"]  # fmt: skip
        lines += [
            f"| {code(loss, table=True)} | {code(var, table=True)} | {verdict} | {error} "
            f"| {coords} | {_escape(why)} |"
            for loss, var, verdict, error, coords, why in numeric
        ]
    if problems and report.problems:
        lines += ["", "**Problems**", ""]
        lines += problem_items(report.findings(), shown_under_cuts=True)
    lines += mermaid.sections(report)  # a picture per loss with a problem, when drawn
    notes = style.note_rows(report)
    if notes:
        lines += ["", "**Notes**", ""]
        lines += [f"- {f'{code(loss)}: ' if loss else ''}{prose(note)}" for loss, note in notes]
    return lines


def report_document(report: m.Report, *, color: bool = False, width: int = 120) -> str:
    title = report.name or report.spec
    head = [
        f"### gradscope: {code(title)}",
        "",
        f"{code(report.spec)} · {report.framework} · {report.device}",
        "",
    ]
    values = ", ".join(f"{code(loss.name)} = {style.number(loss.value)}" for loss in report.losses)
    body = sections(report)
    tail = ["", f"Losses: {values}", "", f"**{style.summary(report)}**", ""]
    return "\n".join(head + body + tail)


# -- check -----------------------------------------------------------------------------------


def problem_items(found: Sequence[Finding], *, shown_under_cuts: bool = False) -> list[str]:
    """Problems, alike ones gathered (``rows.problem_rows``), then each fix once, naming what
    it covers (``rows.fix_groups``); ``shown_under_cuts``: a problem with cut points has its
    fix under *Where the gradient was cut* already."""
    lines = []
    for row in problem_rows(found):
        known = " (known)" if row.finding.known else ""
        lines.append(f"- **{row.finding.kind}**{known}: {prose(row.message)}")
    fixes = [(str(f.variable or ""), None if shown_under_cuts and f.cut_points else f.fix)
             for f in found]  # fmt: skip
    return lines + [fix_entry(names, fix) for names, fix in fix_groups(fixes)]


def fix_entry(names: Sequence[str], fix: Fix) -> str:
    """A fix said once, as a list item naming what it covers."""
    covered = f" ({escape(covered_names(names))})" if any(names) else ""
    return f"- **fix**{covered}: {prose(fix.sentence())}"


def _finding(f: Finding, message: str) -> str:
    mark = "☑️ **known**" if f.known else "❌"
    return f"- {mark} **{f.kind}** {code(f'{f.file}:{f.location.line}')}: {prose(message)}"


def _specs(result: CheckResult) -> list[str]:
    lines = ["| | spec | pairs |", "|---|---|---|"]
    for r in result.reports:
        mark = "❌" if r.failures else "✅"
        lines.append(f"| {mark} | {code(r.spec, table=True)} | {escape(style.summary(r))} |")
    return lines


def _details(report: m.Report) -> list[str]:
    title = report.name or report.spec
    open_ = " open" if report.failures else ""
    return [
        f"<details{open_}><summary><code>{html(report.spec)}</code>: {html(title)}, "
        f"{html(style.summary(report))}</summary>",
        "",
        *sections(report, problems=False),
        "",
        "</details>",
    ]


def check_document(result: CheckResult, *, color: bool = False, width: int = 120) -> str:
    """The check result as a pull-request comment."""
    icon = "✅" if result.passed else "❌"
    first = result.reports[0]
    where = f"{first.framework} · {first.device}"
    if result.baseline:
        where += f" · baseline {code(result.baseline)}"
    lines = [f"### {icon} gradscope check {prose(result.verdict())}", "", where, ""]
    if result.problems:
        ordered = sorted(result.findings(), key=lambda f: f.known)
        lines += ["**Problems**", ""]
        lines += [_finding(r.finding, r.message) for r in problem_rows(ordered)]
        lines += [fix_entry(n, fix) for n, fix in fix_groups((str(f.variable or ""), f.fix)
                                                             for f in ordered)]  # fmt: skip
        lines.append("")
    if result.fixed:
        lines += ["**Fixed since the baseline**", ""]
        lines += [f"- {kind} {code(loss or '-')} × {code(var or '-')} in {code(spec)}"
                  for spec, loss, var, kind in result.fixed]  # fmt: skip
        lines.append("")
    if len(result.reports) > 1:
        lines += [*_specs(result), ""]
    for report in result.reports:
        lines += [*_details(report), ""]
    lines.append(f"Exit code {int(result.exit_code)}.")
    return "\n".join(lines) + "\n"


# -- diff ------------------------------------------------------------------------------------


_CONFLICTS = "**Pulling against each other** (negative cosine, most negative first)"


def _head(report: m.Report, what: str) -> list[str]:
    title = report.name or report.spec
    return [
        f"### gradscope diff: {what} in {code(title)}",
        "",
        f"`{report.spec}` · {report.framework} · {report.device}",
        "",
    ]


def _variables(result: DiffReport) -> list[str]:
    a, b = result.loss_a.name, result.loss_b.name
    header = ["variable", "shape", f"A: `{a}`", f"B: `{b}`", "cosine", "signs agree", "norm A/B"]
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for v in result.diff.variables:
        numbers = ["", "", ""]
        if v.reach == BOTH:
            numbers = [ds.cosine(v.cosine), ds.percent(v.sign_agreement), ds.ratio(v.norm_ratio)]
        cells = [code(v.variable, table=True), style.shape(v.shape), _cell(v.a), _cell(v.b)]
        lines.append("| " + " | ".join(cells + numbers) + " |")
    return lines


def _reach(diff: Diff) -> list[str]:
    rows = [v for r in REACHES[1:] for v in diff.variables if v.reach == r]
    if not rows:
        return []
    lines = ["", "**Who reaches what**", ""]
    for v in rows:
        where = ds.sources(diff, v.variable)
        at = f" (at `{where}`)" if where else ""
        label = ds.reach_label(diff, v.reach, quote="`")
        lines.append(f"- {code(v.variable)}, {label}: {prose(v.explanation or '')}{at}")
    return lines


def _conflicts(diff: Diff) -> list[str]:
    if not diff.conflicts:
        return []
    lines = ["", _CONFLICTS, ""]
    for v in diff.conflicts:
        lines.append(
            f"- {code(v.variable)}: cosine {ds.cosine(v.cosine)}, signs agree on "
            f"{ds.percent(v.sign_agreement)}, norm A/B {ds.ratio(v.norm_ratio)}"
        )
    return lines


def diff_document(result: DiffReport) -> str:
    diff = result.diff
    head = _head(result.report, f"`{diff.loss_a}` vs `{diff.loss_b}`")
    body = _variables(result) + _reach(diff) + _conflicts(diff)
    values = f"`{result.loss_a.name}` = {style.number(result.loss_a.value)}, " \
        f"`{result.loss_b.name}` = {style.number(result.loss_b.value)}"  # fmt: skip
    notes = _notes(result.report)
    tail = [
        "",
        f"**{diff.whole_model()}**",
        "",
        f"Losses: {values}",
        "",
        *notes,
        diff.summary(),
        "",
    ]
    return "\n".join(head + body + tail)


def _notes(report: m.Report) -> list[str]:
    """Every note of the report the diff was made from, as inspect's markdown lists them."""
    rows = style.note_rows(report)
    if not rows:
        return []
    return (
        ["**Notes**", ""]
        + [f"- {f'`{loss}`: ' if loss else ''}{prose(note)}" for loss, note in rows]
        + [""]
    )


def _matrix(result: DiffMatrix) -> list[str]:
    header = ["loss"] + [code(n, table=True) for n in result.losses]
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for a in result.losses:
        cells = [code(a, table=True)]
        for b in result.losses:
            value = result.cosine(a, b)
            text = ds.cosine(value)
            cells.append(f"**{text}**" if value is not None and value < 0 and a != b else text)
        lines.append("| " + " | ".join(cells) + " |")
    lines += ["", "Whole-model cosine over the variables both losses reach; - : none shared."]
    return lines


def matrix_document(result: DiffMatrix) -> str:
    lines = _head(result.report, "every pair of losses")
    if len(result.losses) < 2:
        lines.append("Only one loss: nothing to compare.")
    else:
        lines += _matrix(result)
    if result.conflicts:
        lines += ["", _CONFLICTS, ""]
        for d in result.conflicts:
            most = ""
            if d.conflicts:
                worst = d.conflicts[0]
                most = f"; most opposed: {code(worst.variable)} ({ds.cosine(worst.cosine)})"
            lines.append(
                f"- {code(d.loss_a)} × {code(d.loss_b)}: cosine {ds.cosine(d.cosine)} "
                f"over {len(d.shared)} shared variable{'s' if len(d.shared) != 1 else ''}{most}"
            )
    lines += ["", *_notes(result.report), f"**{result.summary()}**", ""]
    return "\n".join(lines)


# -- run -------------------------------------------------------------------------------------


def _call(call: rr.CallResult, named: set[str]) -> list[str]:
    """A call's table, consecutive sources that read the same in one row (as the terminal
    table gathers them: 200 variables stay a page); a source a problem names keeps its own."""
    lines = [f"### {escape(heading(call))}", ""]
    replicas = [f"replica {r}" for r in range(len(call.replica_values))]
    columns = ["source", "shape", "status", "norm", *replicas, "cut at / why"]
    lines += ["| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)]
    for row in source_rows(call, named):
        s = row.first
        norm = row.norm()
        each = [style.replica_cell(r.status, r.norm) for r in s.replicas]
        each += [""] * (len(replicas) - len(each))
        name, shape = escape(row.label()), escape(row.shape())
        if len(row.sources) == 1:
            name = code(s.name, table=True)
            name += f" ({code(s.attribute, table=True)})" if s.attribute else ""
            shape = style.shape(s.shape)
        cells = [name, shape, s.status, norm, *each,
                 escape(why(s))]  # fmt: skip
        lines.append("| " + " | ".join(cells) + " |")
    found = fixes(call.sources)
    if found:
        lines += [""] + [fix_entry(names, fix) for names, fix in found]
    lines += ["", *[f"> {escape(n)}" for n in call.notes]]
    return lines


def run_document(report: rr.RunReport, *, color: bool = False, width: int = 120) -> str:
    """The run report as a Markdown document; a run ``--stop`` stopped opens with a warning
    saying so (GitHub draws ``> [!WARNING]`` as an alert)."""
    what = " ".join(report.argv) if report.entry == rr.RUN else report.program
    lines = [f"## gradscope {report.entry} · `{escape(what)}`", "",
             f"{report.framework} · {report.device}", ""]  # fmt: skip
    if report.stop is not None:  # what did not run was not watched: never a quiet pass
        lines += ["> [!WARNING]", f"> {escape(ending(report))}", ""]
    found = report.findings()
    for call in report.calls:
        lines += _call(call, named_in(found, call))
    if found:
        lines += ["### Problems", ""]
        for row in problem_rows(found):
            lines.append(f"- **{row.finding.kind}**: {escape(row.message)}")
        lines += [fix_entry(names, fix) for names, fix in unshown_run_fixes(report, found)]
        lines.append("")
    lines += [f"> {escape(n)}" for n in report.notes]
    lines.append(f"**{escape(run_summary(report))}**")
    return "\n".join(lines) + "\n"
