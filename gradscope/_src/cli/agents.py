"""``gradscope mcp``: gradscope as a Model Context Protocol server over stdio, for coding agents
(the tools: ``cli/agent_tools.py``; what they share: ``cli/agent_calls.py``; registering the
server: docs/guides/agents.md)."""

from __future__ import annotations

import os

import click

from gradscope._src.cli.commands import summary


@click.command(short_help=summary("mcp"))
@click.option("--root", type=click.Path(exists=True, file_okay=False), default=".",
              show_default=True,
              help="The working folder: every path a tool is given must lie inside it, and "
                   "programs run in it.")  # fmt: skip
def mcp(root: str) -> None:
    """Serve gradscope's tools to coding agents over the Model Context Protocol (stdio).

    Tools: inspect, run, check, explain, prove_fix (docs/guides/agents.md). Needs the mcp
    extra: pip install 'gradscope-tf[mcp]'.
    """
    from gradscope._src.errors import UsageError

    try:
        import mcp as _sdk  # noqa: F401
    except ImportError:
        raise UsageError(
            "the MCP server needs the mcp package: pip install 'gradscope-tf[mcp]'"
        ) from None
    from gradscope._src.cli.agent_tools import serve

    serve(os.path.realpath(root))
