"""The terminal table of ``gradscope run``: per watched call, each source's status and norm."""

from __future__ import annotations

from typing import Any

from rich.console import Group
from rich.table import Table
from rich.text import Text

from gradscope.report import style
from gradscope.report.table import to_text
from gradscope.results import report as m
from gradscope.results import run as rr

#: How the program ended, in words.
ENDINGS = {
    rr.FINISHED: "the program ran to its end",
    rr.STOPPED: "stopped by --stop at step {next} of {site} (--steps {steps})",
    rr.RAISED: "the program raised (its traceback is above)",
    rr.INTERRUPTED: "interrupted",
    rr.EXITED: "the program exited with status {status}",
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
    """The cut points of a source, or its note."""
    if source.cut_points:
        return "; ".join(style.cut_text(c) for c in source.cut_points)
    return source.note


def _call(call: rr.CallResult) -> Group:
    table = Table(box=None, pad_edge=False, show_edge=False, header_style="bold")
    replicas = [f"replica {r}" for r in range(len(call.replica_values))]
    for name in ("source", "shape", "status", "norm", *replicas, "cut at / why"):
        table.add_column(name, no_wrap=name != "cut at / why", overflow="fold")
    for s in call.sources:
        norm = style.number(s.norm) if m.has_gradient(s.status) else "-"
        if s.sparse and m.has_gradient(s.status):
            norm += " (sparse)"
        status = Text(s.status, style=style.STATUS_STYLE.get(s.status, ""))
        each = [Text(style.replica_cell(r.status, r.norm), style=style.STATUS_STYLE[r.status])
                for r in s.replicas]  # fmt: skip
        each += [Text("")] * (len(replicas) - len(each))
        table.add_row(s.name, style.shape(s.shape), status, norm, *each, why(s))
    parts: list[Any] = [Text(heading(call), style="bold"), table]
    parts += [Text(f"note: {n}", style="dim") for n in call.notes]
    return Group(*parts)


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


def renderable(report: rr.RunReport) -> Group:
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
        parts += [Text(), _call(call)]
    if report.problems:
        parts += [Text(), _problems(report)]
    parts += [Text(f"note: {n}", style="dim") for n in report.notes]
    parts += [Text(), Text(summary(report), style=f"bold {tone(report)}")]
    return Group(*parts)


def render(report: rr.RunReport, *, color: bool = False, width: int = 120) -> str:
    """The run report as a terminal table."""
    return to_text(renderable(report), color=color, width=width)
