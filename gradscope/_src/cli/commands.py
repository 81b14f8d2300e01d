"""The commands of ``gradscope``, listed without importing them.

``gradscope --help`` prints this table; a command's module (and what it imports) is loaded
only when the command runs or shows its own help. Each command takes its one-line summary
from here, so the listing and the command never disagree.
"""

from __future__ import annotations

from typing import NamedTuple


class Entry(NamedTuple):
    module: str  # defines a click command named like the entry
    summary: str  # one line for `gradscope --help`: fits 80 columns


COMMANDS: dict[str, Entry] = {
    "check": Entry(
        "gradscope._src.cli.check", "Fail when gradients are not what the specs say: the CI gate."
    ),
    "diff": Entry("gradscope._src.cli.diff", "Two losses side by side: shared, conflicting, own."),
    "graph": Entry(
        "gradscope._src.cli.graph", "Draw the gradient flow to a loss: where it is cut."
    ),
    "inspect": Entry(
        "gradscope._src.cli.inspect", "Every loss x every variable: status, norm, cause."
    ),
    "fix": Entry(
        "gradscope._src.cli.fix", "Prove a program's fixes in a scratch copy; apply them."
    ),
    "mcp": Entry("gradscope._src.cli.agents", "Serve gradscope to coding agents (MCP, stdio)."),
    "plot": Entry("gradscope._src.cli.plot", "Draw a timeline's gradient norms over steps."),
    "run": Entry("gradscope._src.cli.run", "Run a Python program and report its gradients."),
    "schema": Entry(
        "gradscope._src.cli.validate", "Print a JSON Schema: the spec's, or an output's."
    ),
    "validate": Entry(
        "gradscope._src.cli.validate", "Check spec files without importing TensorFlow."
    ),
}


def summary(name: str) -> str:
    """The one-line summary of command ``name``."""
    return COMMANDS[name].summary
