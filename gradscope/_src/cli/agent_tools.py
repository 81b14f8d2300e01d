"""The tools of ``gradscope mcp``, the Model Context Protocol server for coding agents.

Tools (docs/guides/agents.md shows how to register the server):

- ``inspect``: every loss x every variable of a spec or Python target (``report-v1.json``);
- ``run``: a Python program run as ``gradscope run`` runs it (``run-v1.json``);
- ``check``: the CI gate over specs or targets (``check-v1.json``);
- ``explain``: a cause of the registry (``results/causes.py``): what it means, what to change;
- ``prove_fix``: ``gradscope fix --check`` on a program: each fix that is a text edit applied
  in a scratch copy inside the working folder and the program run again (``fix-v1.json``).

Each tool's arguments and result are the published schemas (``gradscope schema mcp``: the
arguments, ``$defs.<tool>``; the result, the schema of the command's JSON): the server lists
them as the tool's ``inputSchema`` and ``outputSchema``, checks every call's arguments against
them, and a result that is not a failure holds the command's JSON as ``structuredContent``. A
failure (a refused path, bad arguments, a command that failed) is ``error-v1.json``, marked
``isError``.

Each tool that runs TensorFlow runs the ``gradscope`` command itself in a child process, with
``--format json``, in the working folder the server was given (``--root``): the same code, the
same options and limits (``--timeout``, the run's own), and the same JSON. The child's
standard output never reaches the protocol's channel; a child that outlives its time limit is
killed with every process of its session, as it is on every other way out of a call. Every
path a tool is given must lie inside the working folder (symbolic links resolved); gradscope
itself reads and writes nothing outside it (the report is written inside it, to
``.gradscope-mcp/``, and removed; ``prove_fix``'s scratch copy is made inside it and removed).

Imported only when the server starts: it needs the ``mcp`` extra.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from typing import Any

import anyio
import jsonschema  # type: ignore[import-untyped]
import mcp_types as types
from mcp.server.lowlevel.server import Server
from mcp.server.stdio import stdio_server

from gradscope._src.cli.agent_calls import (
    NAME,
    Outcome,
    Refused,
    TimedOut,
    explain,
    gradscope,
    inside,
    schema,
    seconds_of,
    target_inside,
)
from gradscope._src.version import __version__

#: Each tool: what it does, and the schema of its result (``gradscope schema NAME``).
DESCRIPTIONS = {
    "inspect": (
        "Every loss x every variable of a YAML spec or a Python target "
        "(path/to/file.py:function) inside the working folder: status, norm, cut points at the "
        "user's lines, and fixes (result: gradscope schema report).",
        "report",
    ),
    "run": (
        "Run a Python program (a script inside the working folder) as `gradscope run` runs "
        "it: every gradient it takes, per call site and source, with fixes (result: gradscope "
        "schema run). The program's own output tails come as a second text content.",
        "run",
    ),
    "check": (
        "The CI gate over specs or Python targets inside the working folder: fails on NaN, "
        "contradicted expectations and never-trained variables (result: gradscope schema "
        "check; exit code 1 when it fails).",
        "check",
    ),
    "explain": (
        "What a cause id means (the `id` of a pair's or source's `cause`, or of a cut "
        "point's): its status, help and fix kinds (result: gradscope schema mcp, "
        "$defs.explanation).",
        "",
    ),
    "prove_fix": (
        "Prove the fixes that are text edits on a program inside the working folder: apply "
        "each in a scratch copy inside that folder, run the program again, and report per "
        "variable the status before and after and whether the forward values stayed the same "
        "(result: gradscope schema fix). Never writes the user's files.",
        "fix",
    ),
}


def tools() -> list[types.Tool]:
    """The tools as the server lists them: each one's arguments and result, the published
    schemas."""
    tools_schema = schema("mcp")
    out = []
    for name, (description, result) in DESCRIPTIONS.items():
        if result:
            output = schema(result)
        else:  # explain: the schema mcp-v1.json defines, standing alone
            output = {"$schema": tools_schema["$schema"], **tools_schema["$defs"]["explanation"]}
        out.append(types.Tool(name=name, description=description,
                              input_schema=tools_schema["$defs"][name],
                              output_schema=output))  # fmt: skip
    return out


def refusal(why: str, kind: str = "usage", **extra: Any) -> types.CallToolResult:
    """A call the server will not make (or a child it killed at its time limit), as
    ``error-v1.json`` marked ``isError``."""
    entry = {"kind": kind, "message": f"gradscope mcp: {why}", "location": None,
             "exit_code": 2}  # fmt: skip
    data = {"gradscope": 1, "command": "mcp", "error": entry, "errors": [entry], **extra}
    return types.CallToolResult(content=[types.TextContent(type="text", text=json.dumps(data))],
                                structured_content=data, is_error=True)  # fmt: skip


def answer(outcome: Outcome, extra: dict[str, Any] | None = None) -> types.CallToolResult:
    """A child's outcome as the tool's result: its JSON (structured), then its exit code and
    the program's own output tails (``extra``)."""
    data = outcome.result()
    said = {"exit_code": outcome.exit_code, **(extra or {})}
    return types.CallToolResult(
        content=[types.TextContent(type="text", text=json.dumps(data)),
                 types.TextContent(type="text", text=json.dumps(said))],
        structured_content=data,
        is_error="error" in data and "errors" in data,
    )  # fmt: skip


def server(root: str) -> Server[Any]:
    """The MCP server, its tools confined to ``root``."""
    listed = {tool.name: tool for tool in tools()}
    checkers = {name: jsonschema.Draft202012Validator(tool.input_schema)
                for name, tool in listed.items()}  # fmt: skip

    async def call(
        args: list[str],
        timeout: float | None,
        program: bool = False,
        scratch: bool = False,
    ) -> types.CallToolResult:
        try:
            outcome = await anyio.to_thread.run_sync(
                lambda: gradscope(root, args, seconds_of(timeout), scratch)
            )
        except TimedOut as why:
            return refusal(str(why), kind="timeout")
        except Refused as why:
            return refusal(str(why))
        tails = {"stdout": outcome.stdout, "stderr": outcome.stderr} if program else {}
        return answer(outcome, tails)

    async def inspect(a: dict[str, Any]) -> types.CallToolResult:
        args = ["inspect", target_inside(root, a["target"]), "--format", "json", "--quiet"]
        args += [w for loss in a.get("losses", ()) for w in ("--loss", loss)]
        return await call(args, a.get("timeout"))

    async def run(a: dict[str, Any]) -> types.CallToolResult:
        script = a["script"]
        inside(root, script)
        options = ["run", "--format", "json", "--steps", str(a.get("steps", 1))]
        options += [w for glob in a.get("allow_none", ()) for w in ("--allow-none", glob)]
        return await call([*options, script, *a.get("args", ())], a.get("timeout"),
                          program=True)  # fmt: skip

    async def check(a: dict[str, Any]) -> types.CallToolResult:
        given = [target_inside(root, s) for s in a["specs"]]
        extra = ["--baseline", inside(root, a["baseline"])] if "baseline" in a else []
        return await call(["check", *given, "--format", "json", "--quiet", *extra],
                          a.get("timeout"))  # fmt: skip

    async def explain_tool(a: dict[str, Any]) -> types.CallToolResult:
        found = explain(a["cause"])
        if found is None:
            from gradscope._src.results.causes import CAUSES

            return refusal(f"unknown cause {a['cause']!r}; `causes` lists the known ids",
                           causes=sorted(CAUSES))  # fmt: skip
        return types.CallToolResult(
            content=[types.TextContent(type="text", text=json.dumps(found))],
            structured_content=found,
        )

    async def prove_fix(a: dict[str, Any]) -> types.CallToolResult:
        script = a["script"]
        inside(root, script)
        options = ["fix", "--check", "--format", "json", "--steps", str(a.get("steps", 1))]
        seconds = seconds_of(a.get("timeout"))
        options += ["--timeout", f"{seconds:g}"]  # each run; the call's own limit bounds both
        return await call([*options, script, *a.get("args", ())], a.get("timeout"),
                          scratch=True)  # fmt: skip

    handlers: dict[str, Callable[[dict[str, Any]], Awaitable[types.CallToolResult]]] = {
        "inspect": inspect, "run": run, "check": check, "explain": explain_tool,
        "prove_fix": prove_fix,
    }  # fmt: skip

    async def list_tools(ctx: Any, params: Any) -> types.ListToolsResult:
        return types.ListToolsResult(tools=list(listed.values()))

    async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        handler = handlers.get(params.name)
        if handler is None:
            return refusal(f"no tool {params.name!r}; the tools: {', '.join(handlers)}")
        arguments = dict(params.arguments or {})
        wrong = next(iter(checkers[params.name].iter_errors(arguments)), None)
        if wrong is not None:
            where = "/".join(map(str, wrong.absolute_path)) or "arguments"
            return refusal(f"{params.name}: {where}: {wrong.message} (gradscope schema mcp, "
                           f"$defs.{params.name})")  # fmt: skip
        try:
            return await handler(arguments)
        except Refused as why:
            return refusal(str(why))

    return Server(NAME, version=__version__, instructions=__doc__, on_list_tools=list_tools,
                  on_call_tool=call_tool)  # fmt: skip


def serve(root: str) -> None:
    """Serve the tools over standard input and output until the client closes them."""
    app = server(root)

    async def main() -> None:
        async with stdio_server() as (read, write):
            await app.run(read, write, app.create_initialization_options())

    anyio.run(main)
