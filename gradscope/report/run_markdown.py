"""The ``gradscope run`` report as Markdown, for pull-request comments and job summaries."""

from __future__ import annotations

from gradscope.report import style
from gradscope.report.markdown import escape, fix_item
from gradscope.report.md import code
from gradscope.report.run_table import ending, fixes, heading, summary, why
from gradscope.results import report as m
from gradscope.results import run as rr


def _call(call: rr.CallResult) -> list[str]:
    lines = [f"### {escape(heading(call))}", ""]
    replicas = [f"replica {r}" for r in range(len(call.replica_values))]
    columns = ["source", "shape", "status", "norm", *replicas, "cut at / why"]
    lines += ["| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)]
    for s in call.sources:
        norm = style.number(s.norm) if m.has_gradient(s.status) else "-"
        each = [style.replica_cell(r.status, r.norm) for r in s.replicas]
        each += [""] * (len(replicas) - len(each))
        name = code(s.name, table=True)
        name += f" ({code(s.attribute, table=True)})" if s.attribute else ""
        cells = [name, style.shape(s.shape), s.status, norm, *each,
                 escape(why(s))]  # fmt: skip
        lines.append("| " + " | ".join(cells) + " |")
    found = fixes(call.sources)
    if found:
        lines += [""] + [f"- **fix** ({escape(names)}): {escape(fix.sentence())}"
                         for names, fix in found]  # fmt: skip
    lines += ["", *[f"> {escape(n)}" for n in call.notes]]
    return lines


def render(report: rr.RunReport, *, color: bool = False, width: int = 120) -> str:
    """The run report as a Markdown document; a run ``--stop`` stopped opens with a warning
    saying so (GitHub draws ``> [!WARNING]`` as an alert)."""
    what = " ".join(report.argv) if report.entry == rr.RUN else report.program
    lines = [f"## gradscope {report.entry} · `{escape(what)}`", "",
             f"TensorFlow {report.tensorflow} · {report.device}", ""]  # fmt: skip
    if report.stop is not None:  # what did not run was not watched: never a quiet pass
        lines += ["> [!WARNING]", f"> {escape(ending(report))}", ""]
    for call in report.calls:
        lines += _call(call)
    if report.problems:
        lines += ["### Problems", ""]
        for p in report.problems:
            lines += [f"- **{p.kind}**: {escape(p.message)}", *fix_item(p.fix)]
        lines.append("")
    lines += [f"> {escape(n)}" for n in report.notes]
    lines.append(f"**{escape(summary(report))}**")
    return "\n".join(lines) + "\n"
