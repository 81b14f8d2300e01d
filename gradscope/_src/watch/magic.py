"""``%load_ext gradscope``: the ``%%gradscope`` cell magic and the ``%gradscope`` line magic.

``%%gradscope [--steps N] [--allow-none GLOB]...`` runs the cell inside ``gradscope.watch()``
and displays its report (an HTML table in a notebook, the terminal table in IPython), also
when the cell raises, whose exception is then raised as the cell's own. ``%gradscope
[options] STATEMENT`` does the same for one statement. The last report is kept in the
notebook's ``_gradscope``. Options are parsed as the command line parses them: an unknown one
is refused with click's "Did you mean" and the cell does not run.
"""

from __future__ import annotations

import re
import shlex
import sys
from typing import Any

import click

#: Options of the magics that take a value (the rest of a line magic is the statement).
_VALUED = ("--steps", "--allow-none")
_OPTION = re.compile(r"""\s*(--|--?[A-Za-z][\w-]*(?:=(?:'[^']*'|"[^"]*"|\S+))?)(?:\s+|$)""")
_VALUE = re.compile(r"""('[^']*'|"[^"]*"|\S+)(?:\s+|$)""")


@click.command(
    name="%%gradscope",
    context_settings={"help_option_names": ["-h", "--help"]},
    epilog="Example:  %%gradscope --steps 2 --allow-none 'generator/*'",
)
@click.option("--steps", type=click.IntRange(min=1), default=1, show_default=True,
              help="Watch the first N executions of each gradient call site.")  # fmt: skip
@click.option("--allow-none", "allow_none", multiple=True, metavar="GLOB",
              help="A source whose None gradient is expected; repeatable.")  # fmt: skip
def _options(steps: int, allow_none: tuple[str, ...]) -> dict[str, Any]:
    """Watch the cell's gradient calls and show the report (gradscope.watch)."""
    return {"steps": steps, "allow_none": allow_none}


def load_ipython_extension(ipython: Any) -> None:
    """``%load_ext gradscope``: register the magics."""
    ipython.register_magic_function(_magic(ipython), "line_cell", "gradscope")


def unload_ipython_extension(ipython: Any) -> None:
    """``%unload_ext gradscope``: nothing to undo (TensorFlow is only patched inside a cell)."""


def parse(args: list[str], name: str) -> dict[str, Any] | None:
    """The options, or None after printing click's usage error or help (to standard error)."""
    try:
        ctx = _options.make_context(name, args)
        return dict(ctx.invoke(_options, **ctx.params))
    except click.exceptions.Exit:  # --help printed
        return None
    except click.UsageError as exc:
        exc.show(file=sys.stderr)
        return None


def split_line(line: str) -> tuple[list[str], str]:
    """A line magic's leading options (as shell words) and the statement after them."""
    args: list[str] = []
    pos = 0
    while (option := _OPTION.match(line, pos)) is not None:
        token, pos = option.group(1), option.end()
        if token == "--":  # the statement starts after it (one that starts with '-')
            break
        args += shlex.split(token)
        if token in _VALUED and (value := _VALUE.match(line, pos)) is not None:
            args += shlex.split(value.group(1))
            pos = value.end()
    return args, line[pos:].strip()


def _magic(ipython: Any) -> Any:
    def gradscope(line: str, cell: str | None = None) -> None:
        if cell is None:
            args, source = split_line(line)
            name = "%gradscope"
        else:
            try:
                args, source = shlex.split(line), cell
            except ValueError as exc:
                print(f"Error: %%gradscope {line}: {exc}", file=sys.stderr)
                return
            name = "%%gradscope"
        options = parse(args, name)
        if options is None:
            return
        if not source.strip():
            print(f"Error: {name}: nothing to watch (give a statement)", file=sys.stderr)
            return
        _watched(ipython, source, options, name, cell is not None)

    return gradscope


def cell_number(ipython: Any) -> int:
    """The number IPython gives the running cell, ``In [N]``: its ``ExecutionResult``'s.
    IPython 9 counts a cell before it runs it (``execution_count`` is then already the next
    cell's; IPython 8 counted after), and a cell run without history keeps the count."""
    result = getattr(getattr(ipython, "displayhook", None), "exec_result", None)
    number = getattr(result, "execution_count", None)
    return number if isinstance(number, int) else int(ipython.execution_count)


def _line_in_cell(ipython: Any, number: int) -> int:
    """The line of the running cell (``In [number]``) that called the magic, counted as the
    notebook shows the cell (1: its first line), or 1 when no frame of the cell is found."""
    names = getattr(getattr(ipython, "compile", None), "_filename_map", None) or {}
    frame = sys._getframe(1)
    while frame is not None:
        if names.get(frame.f_code.co_filename) == number:
            return int(frame.f_lineno)
        frame = frame.f_back  # type: ignore[assignment]
    return 1


def _watched(ipython: Any, source: str, options: dict[str, Any], name: str, cell: bool) -> None:
    """Run ``source`` in the notebook's namespace inside ``watch()``; show the report.

    Its lines are numbered as the notebook shows the cell: a cell magic's body from line 2
    (the ``%%gradscope`` line is 1), a line magic's statement at the line that holds it.
    """
    from IPython.display import display

    from gradscope._src.watch.block import watching

    number = cell_number(ipython)
    before = 1 if cell else _line_in_cell(ipython, number) - 1
    code = "\n" * before + ipython.transform_cell(source)
    # its lines for tracebacks and sites, under In[number]
    filename = ipython.compile.cache("\n" * before + source, number)
    compiled = compile(code, filename, "exec")
    from IPython.core.error import UsageError as Said

    from gradscope._src.frontends.backend import NotTensorFlow

    block = watching(options["steps"], options["allow_none"], f"{name} in In[{number}]")
    refused: NotTensorFlow | None = None
    try:
        with block:
            exec(compiled, ipython.user_global_ns, ipython.user_ns)
    except NotTensorFlow as exc:  # JAX or PyTorch gradients: one line, no report
        refused = exc
    finally:
        if block.ended and refused is None:
            ipython.user_ns["_gradscope"] = block.report
            display(block.report)
    if refused is not None:
        raise Said(str(refused)) from None  # IPython shows its message alone
