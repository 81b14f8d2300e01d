"""Capture a real terminal run of a command as an SVG picture (the README's).

    python scripts/capture.py OUT.svg gradscope run docs/examples/gan.py

The command runs in a pseudo-terminal 100 columns wide, so it prints what a user sees, colours
included (its progress line, which a terminal overwrites, is left out). rich turns that output
into an SVG whose title is the command. ``gradscope`` is this interpreter's ``-m gradscope``.
``tests/test_readme_picture.py`` checks that every line of the picture is printed by a fresh run.
"""

from __future__ import annotations

import os
import pty
import re
import subprocess
import sys
from pathlib import Path

WIDTH = 100
#: Control sequences that move the cursor or erase: a terminal's redrawn progress line.
_CONTROL = re.compile(r"\x1b\[[0-9;?]*[ABCDEFGHJKlhsu]")


def run_in_terminal(command: list[str], cwd: Path) -> str:
    """What ``command`` prints to a terminal of :data:`WIDTH` columns (both streams)."""
    main, child = pty.openpty()
    env = os.environ | {"COLUMNS": str(WIDTH), "LINES": "50", "TERM": "xterm-256color"}
    env.pop("NO_COLOR", None)
    process = subprocess.Popen(command, cwd=cwd, env=env, stdout=child, stderr=child)
    os.close(child)
    chunks: list[bytes] = []
    while True:
        try:
            data = os.read(main, 65536)
        except OSError:  # the child closed the terminal
            break
        if not data:
            break
        chunks.append(data)
    process.wait(timeout=600)
    os.close(main)
    return b"".join(chunks).decode("utf-8", "replace")


def settled(text: str) -> str:
    """The lines a terminal shows once the command ended: a line rewritten after ``\\r`` keeps
    its last text, and a progress line erased at the end is gone."""
    lines = []
    for line in text.replace("\r\n", "\n").split("\n"):
        line = line.rsplit("\r", 1)[-1]
        if _CONTROL.search(line):
            line = _CONTROL.sub("", line)
            if not line.strip():
                continue
        lines.append(line)
    return "\n".join(lines).strip("\n") + "\n"


def main(argv: list[str]) -> int:
    if len(argv) < 2:
        print(__doc__, file=sys.stderr)
        return 2
    from rich.console import Console
    from rich.text import Text

    out, command = Path(argv[0]), argv[1:]
    shown = " ".join(command)
    if command[0] == "gradscope":
        command = [sys.executable, "-m", "gradscope", *command[1:]]
    root = Path(__file__).resolve().parents[1]
    text = settled(run_in_terminal(command, root))
    with open(os.devnull, "w") as nowhere:
        console = Console(record=True, width=WIDTH, force_terminal=True, file=nowhere)
        console.print(Text.from_ansi(text), soft_wrap=True)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(console.export_svg(title=f"$ {shown}"), encoding="utf-8")
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
