"""The terminal view of ``check``: the failing specs' matrices, every problem with its line,
the specs at a glance, and the verdict with its exit code."""

from __future__ import annotations

from typing import Any

from rich.console import Group
from rich.rule import Rule
from rich.table import Table
from rich.text import Text

from gradscope.analysis.check import CheckResult
from gradscope.report import grid, style
from gradscope.report.rows import problem_rows
from gradscope.report.table import Lines, report_renderable, to_text
from gradscope.results import report as m


def _header(result: CheckResult) -> Text:
    first = result.reports[0]
    text = Text()
    text.append("gradscope check", style="bold")
    text.append(f" · {result.checked()}")
    text.append(f" · TensorFlow {first.tensorflow} · {first.device}", style="dim")
    if result.baseline:
        text.append(f" · baseline {result.baseline}", style="dim")
    return text


def problems_table(problems: tuple[m.Problem, ...], group: str = "auto") -> Any:
    """One row per problem: new or known, kind, ``FILE:LINE`` and the message (below the rest
    when the terminal is too narrow for it beside them); alike ones gathered (``rows``)."""
    ordered = sorted(problems, key=lambda p: p.known)  # new ones first, order kept otherwise
    rows = [
        [("known", "dim") if r.problem.known else ("✗", "bold red"),
         (r.problem.kind, "dim" if r.problem.known else "red"),
         (f"{r.problem.spec}:{r.problem.line}", "dim"),
         (style.with_fix(r.message, r.problem.fix), "")]
        for r in problem_rows(ordered, group)
    ]  # fmt: skip
    return Lines(lambda width: grid.columns(None, rows, width, indent=0), "Problems")


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
        parts += [problems_table(result.problems, group), Text()]
    if result.fixed:
        parts += [_fixed(result), Text()]
    if several or summary_only:
        parts += [_specs_table(result), Text()]
    tone = "green" if result.passed else "red"
    verdict = f"{result.verdict()} (exit code {int(result.exit_code)})"
    parts.append(Text(verdict, style=f"bold {tone}"))
    return Group(*parts)


def render(
    result: CheckResult,
    *,
    color: bool = False,
    width: int = 120,
    summary_only: bool = False,
    group: str = "auto",
    problems_only: bool = False,
) -> str:
    """The check result for a terminal or a CI log (no trailing blanks on any line)."""
    renderable = check_renderable(
        result, summary_only=summary_only, group=group, problems_only=problems_only
    )
    return to_text(renderable, color=color, width=width)
