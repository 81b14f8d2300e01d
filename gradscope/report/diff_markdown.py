"""Markdown of ``gradscope diff`` for pull-request comments: the side-by-side or the matrix."""

from __future__ import annotations

from gradscope.analysis.diff import BOTH, REACHES, Diff, DiffReport
from gradscope.analysis.diff_matrix import DiffMatrix
from gradscope.report import diff_style as ds
from gradscope.report import style
from gradscope.report.markdown import _cell
from gradscope.report.md import code, prose
from gradscope.results import report as m

_CONFLICTS = "**Pulling against each other** (negative cosine, most negative first)"


def _head(report: m.Report, what: str) -> list[str]:
    title = report.name or report.spec
    return [
        f"### gradscope diff: {what} in {code(title)}",
        "",
        f"`{report.spec}` · TensorFlow {report.tensorflow} · {report.device}",
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


def render_diff(result: DiffReport) -> str:
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


def render_matrix(result: DiffMatrix) -> str:
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


def render(result: DiffReport | DiffMatrix, *, color: bool = False, width: int = 120) -> str:
    """A diff, or the matrix of every pair, as Markdown."""
    if isinstance(result, DiffMatrix):
        return render_matrix(result)
    return render_diff(result)
