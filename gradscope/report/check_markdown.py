"""Markdown for a pull-request comment on ``check``: the verdict, every problem with its line,
the specs at a glance, and each spec's matrix folded in a ``<details>`` block."""

from __future__ import annotations

from gradscope.analysis.check import CheckResult
from gradscope.report import style
from gradscope.report.markdown import escape, fix_item, sections
from gradscope.report.md import code, html, prose
from gradscope.results import report as m


def _problem(p: m.Problem) -> str:
    mark = "☑️ **known**" if p.known else "❌"
    line = f"- {mark} **{p.kind}** {code(f'{p.spec}:{p.line}')}: {prose(p.message)}"
    return "\n".join([line, *fix_item(p.fix)])


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


def render(result: CheckResult, *, color: bool = False, width: int = 120) -> str:
    """The check result as a pull-request comment."""
    icon = "✅" if result.passed else "❌"
    first = result.reports[0]
    where = f"TensorFlow {first.tensorflow} · {first.device}"
    if result.baseline:
        where += f" · baseline {code(result.baseline)}"
    lines = [f"### {icon} gradscope check {prose(result.verdict())}", "", where, ""]
    if result.problems:
        ordered = sorted(result.problems, key=lambda p: p.known)
        lines += ["**Problems**", "", *[_problem(p) for p in ordered], ""]
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
