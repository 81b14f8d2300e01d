"""MkDocs hooks: the reference pages are generated from the code when the site is built.

A page asks for a generated part with a marker on a line of its own:

- ``<!-- gradscope:help -->``: every command's ``--help``, as click prints it at 100 columns;
- ``<!-- gradscope:exit-codes -->``: the table of :class:`gradscope._src.errors.ExitCode`, from the
  members and the docstrings under them;
- ``<!-- gradscope:schema NAME -->``: a JSON schema of ``schema/``: its top-level fields and
  the whole file.

Nothing here imports TensorFlow: ``--help`` never does.
"""

from __future__ import annotations

import ast
import json
import re
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
MARKER = re.compile(r"^<!-- gradscope:([\w-]+)(?: ([\w.-]+))? -->$", re.MULTILINE)


def on_page_markdown(markdown: str, **kwargs: Any) -> str:
    """Replace each marker of a page with what it names."""

    def expand(match: re.Match[str]) -> str:
        kind, argument = match.group(1), match.group(2)
        if kind == "help":
            return command_help()
        if kind == "exit-codes":
            return exit_codes()
        if kind == "schema" and argument:
            return schema(argument)
        raise ValueError(f"unknown docs marker: {match.group(0)}")

    return MARKER.sub(expand, markdown)


def _help(args: list[str]) -> str:
    from click.testing import CliRunner

    from gradscope._src.cli import main

    result = CliRunner().invoke(main, [*args, "--help"], terminal_width=100, prog_name="gradscope")
    if result.exit_code != 0:
        raise RuntimeError(f"gradscope {' '.join(args)} --help failed: {result.output}")
    return result.output.rstrip()


def command_help() -> str:
    """``gradscope --help`` and each command's, one section each."""
    from gradscope._src.cli.commands import COMMANDS

    parts = ["## gradscope", "", "```text", _help([]), "```", ""]
    for name in sorted(COMMANDS):
        parts += [f"## gradscope {name}", "", "```text", _help([name]), "```", ""]
    return "\n".join(parts)


def exit_codes() -> str:
    """The exit codes, from the ``ExitCode`` enum's members and their docstrings."""
    tree = ast.parse((ROOT / "gradscope" / "_src" / "errors.py").read_text(encoding="utf-8"))
    enum = next(n for n in ast.walk(tree) if isinstance(n, ast.ClassDef) and n.name == "ExitCode")
    rows = ["| code | name | meaning |", "|---|---|---|"]
    body = enum.body
    for statement, after in zip(body, [*body[1:], None], strict=True):
        if not (isinstance(statement, ast.Assign) and isinstance(statement.value, ast.Constant)):
            continue
        name = statement.targets[0].id  # type: ignore[attr-defined]
        doc = ""
        if isinstance(after, ast.Expr) and isinstance(after.value, ast.Constant):
            doc = " ".join(str(after.value.value).split())
        rows.append(f"| {statement.value.value} | `{name}` | {doc} |")
    return "\n".join(rows)


def schema(name: str) -> str:
    """A schema's title, description, top-level fields and the whole file."""
    path = ROOT / "schema" / name
    data = json.loads(path.read_text(encoding="utf-8"))
    # a schema of several forms (check-v1.json): the first form's fields
    form = next((f for f in data.get("anyOf", []) if "properties" in f), data)
    form = data if "properties" in data else form
    required = set(form.get("required", []))
    rows = ["| field | required | type | description |", "|---|---|---|---|"]
    for field, spec in form.get("properties", {}).items():
        kind = spec.get("type") or ("enum" if "enum" in spec else "")
        if "$ref" in spec:
            kind = spec["$ref"].rsplit("/", 1)[-1]
        if isinstance(kind, list):
            kind = " or ".join(kind)
        description = " ".join(str(spec.get("description", "")).split()).replace("|", "\\|")
        rows.append(
            f"| `{field}` | {'yes' if field in required else ''} | {kind} | {description} |"
        )
    text = json.dumps(data, indent=2, ensure_ascii=False)
    return "\n".join(
        [
            f"**{data.get('title', name)}**. {data.get('description', '')}",
            "",
            *rows,
            "",
            f'??? note "The whole of schema/{name}"',
            "",
            "    ```json",
            *("    " + line for line in text.splitlines()),
            "    ```",
        ]
    )
