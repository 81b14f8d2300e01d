"""The tools of ``gradscope mcp``, the Model Context Protocol server for coding agents.

Tools (docs/guides/agents.md shows how to register the server):

- ``inspect``: every loss x every variable of a spec or Python target (``report-v1.json``);
- ``run``: a Python program run as ``gradscope run`` runs it (``run-v1.json``);
- ``check``: the CI gate over specs or targets (``check-v1.json``);
- ``explain``: a cause of the registry (``results/causes.py``): what it means, what to change;
- ``prove_fix``: ``gradscope fix --check`` on a program: each fix that is a text edit applied
  in a scratch copy and the program run again (``fix-v1.json``).

Each tool that runs TensorFlow runs the ``gradscope`` command itself in a child process, with
``--format json``, in the working folder the server was given (``--root``): the same code, the
same options and limits (``--timeout``, the run's own), and the same JSON, valid against the
same schemas (a failure: ``error-v1.json``). The child's standard output never reaches the
protocol's channel; a child that outlives its time limit is killed with its whole process
group, as it is on every other way out of a call. Every path a tool is given must lie inside
the working folder (symbolic links resolved); gradscope itself reads and writes nothing
outside it (the report is written inside it, to ``.gradscope-mcp/``, and removed).

Imported only when the server starts: it needs the ``mcp`` extra. The SDK reads each tool's
annotations at run time, so what they name is imported here, at the top.
"""

from __future__ import annotations

import json
from typing import Any

import anyio
from mcp.server.mcpserver import MCPServer
from mcp_types import CallToolResult, TextContent

from gradscope._src.cli.agent_calls import (
    NAME,
    Outcome,
    Refused,
    explain,
    gradscope,
    inside,
    seconds_of,
    target_inside,
)


def server(root: str) -> Any:
    """The MCP server, its tools confined to ``root``."""
    app: MCPServer[Any] = MCPServer(NAME, instructions=__doc__)

    def answer(outcome: Outcome, extra: dict[str, Any] | None = None) -> CallToolResult:
        data = outcome.result()
        said = {"exit_code": outcome.exit_code, **(extra or {})}
        return CallToolResult(
            content=[TextContent(type="text", text=json.dumps(data)),
                     TextContent(type="text", text=json.dumps(said))],
            structured_content=data,
            is_error="error" in data and "errors" in data,
        )  # fmt: skip

    def refused(why: Exception) -> CallToolResult:
        entry = {"kind": "usage", "message": f"gradscope mcp: {why}", "location": None,
                 "exit_code": 2}  # fmt: skip
        data = {"gradscope": 1, "command": "mcp", "error": entry, "errors": [entry]}
        return CallToolResult(content=[TextContent(type="text", text=json.dumps(data))],
                              structured_content=data, is_error=True)  # fmt: skip

    async def call(args: list[str], timeout: float | None, report: bool = False,
                   program: bool = False) -> CallToolResult:  # fmt: skip
        try:
            outcome = await anyio.to_thread.run_sync(
                lambda: gradscope(root, args, seconds_of(timeout), report)
            )
        except Refused as why:
            return refused(why)
        tails = {"stdout": outcome.stdout, "stderr": outcome.stderr} if program else {}
        return answer(outcome, tails)

    @app.tool(description="Every loss x every variable of a YAML spec or a Python target "
              "(path/to/file.py:function) inside the working folder: status, norm, cut points "
              "at the user's lines, and fixes (schema: gradscope schema report).")  # fmt: skip
    async def inspect(target: str, losses: list[str] | None = None,
                      timeout: float | None = None) -> CallToolResult:  # fmt: skip
        try:
            target = target_inside(root, target)
        except Refused as why:
            return refused(why)
        args = ["inspect", target, "--format", "json", "--quiet"]
        args += [a for loss in losses or () for a in ("--loss", loss)]
        return await call(args, timeout)

    @app.tool(
        description="Run a Python program (a script inside the working folder) as "
        "`gradscope run` runs it: every gradient it takes, per call site and source, with "
        "fixes (schema: gradscope schema run). The program's own output tails come too."
    )
    async def run(script: str, args: list[str] | None = None, steps: int = 1,
                  allow_none: list[str] | None = None,
                  timeout: float | None = None) -> CallToolResult:  # fmt: skip
        try:
            inside(root, script)
        except Refused as why:
            return refused(why)
        options = ["run", "--format", "json", "--steps", str(max(1, int(steps)))]
        options += [a for glob in allow_none or () for a in ("--allow-none", glob)]
        return await call([*options, script, *(args or ())], timeout, report=True,
                          program=True)  # fmt: skip

    @app.tool(description="The CI gate over specs or Python targets inside the working "
              "folder: fails on NaN, contradicted expectations and never-trained variables "
              "(schema: gradscope schema check; exit code 1 when it fails).")  # fmt: skip
    async def check(specs: list[str], baseline: str | None = None,
                    timeout: float | None = None) -> CallToolResult:  # fmt: skip
        try:
            given = [target_inside(root, s) for s in specs]
            extra = ["--baseline", inside(root, baseline)] if baseline else []
        except Refused as why:
            return refused(why)
        return await call(["check", *given, "--format", "json", "--quiet", *extra], timeout)

    @app.tool(
        name="explain",
        description="What a cause id means (the `id` of a pair's or "
        "source's `cause`, or of a cut point's): its status, help and fix kinds.",
    )
    async def explain_tool(cause: str) -> dict[str, Any]:
        return explain(cause)

    @app.tool(description="Prove the fixes that are text edits on a program inside the "
              "working folder: apply each in a scratch copy, run the program again, and "
              "report per variable the status before and after and whether the forward "
              "values stayed the same (schema: gradscope schema fix). Never writes the "
              "user's files.")  # fmt: skip
    async def prove_fix(script: str, args: list[str] | None = None, steps: int = 1,
                        timeout: float | None = None) -> CallToolResult:  # fmt: skip
        try:
            inside(root, script)
        except Refused as why:
            return refused(why)
        options = ["fix", "--check", "--format", "json", "--steps", str(max(1, int(steps)))]
        return await call([*options, script, *(args or ())], timeout)

    return app
