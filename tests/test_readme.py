"""Every gradscope command the README prints runs as printed, and says what the README shows.

Commands come from ``console`` blocks (``$ gradscope ...``, the lines up to the next ``$``
being its output) and ``sh`` blocks (lines starting with ``gradscope``). Each runs in this
process through click's runner at 120 columns, in README order (the baseline written by one
command is read by the next); files a command writes go to a temporary folder. Every output
line the README shows (``...`` stands for lines left out) must appear in the real output, so
a number in the README is a number gradscope prints. Commands with placeholders (``<...>``,
``my_pkg``), on the reader's own program (``train.py``) or on a file the reader's own training
writes (``timeline.json``, ``grads.json``), or outside gradscope (``make``, ``pip``, ``git``)
are not run.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from gradscope.report import graphviz
from tests.conftest import ROOT, run_in_process

pytestmark = pytest.mark.tf

README = ROOT / "README.md"
#: Options whose value is a file the command writes.
WRITES = ("-o", "--output", "--write-baseline")
#: The exit code of commands that do not exit 0 (the README says so beside each).
EXIT = {
    "gradscope check configs/two-heads.yaml": 1,
    "gradscope check configs/*.yaml": 1,
    "gradscope check configs/*.yaml --write-baseline gradscope-baseline.json": 1,
    "gradscope validate docs/broken.yaml": 2,
    "gradscope check configs/global-batch.yaml --strategy mirrored --replicas 2": 1,
    "cd tests/frontends/program/programs && gradscope run dcgan.py": 1,
}


#: Words of commands the README shows but that need the reader's own files.
ILLUSTRATIONS = ("<", "my_pkg", "train.py", "timeline.json", "grads.json")


@dataclass
class Command:
    line: int
    text: str
    shown: list[str] = field(default_factory=list)  # the output the README prints


def commands(text: str) -> list[Command]:
    """The gradscope commands of the README's console and sh blocks, in order."""
    found: list[Command] = []
    kind = None
    for number, line in enumerate(text.splitlines(), 1):
        if line.startswith("```"):
            kind = line[3:].strip() if kind is None else None
            continue
        if kind == "console" and line.startswith("$ "):
            found.append(Command(number, line[2:].strip()))
        elif kind == "console" and found and found[-1].line < number and line.strip():
            found[-1].shown.append(line)
        elif kind == "sh" and line.startswith("gradscope "):
            found.append(Command(number, line.split("  #")[0].strip()))
    return [c for c in found if not any(word in c.text for word in ILLUSTRATIONS)]


COMMANDS = commands(README.read_text(encoding="utf-8"))


def _argv(command: Command, tmp: Path) -> tuple[list[str], Path]:
    """The arguments after ``gradscope`` (globs expanded, written files moved to ``tmp``) and
    the folder to run in (``cd X && gradscope ...``)."""
    text, cwd = command.text, ROOT
    if text.startswith("cd "):
        folder, _, text = text[3:].partition(" && ")
        cwd = ROOT / folder
    words = shlex.split(text)
    assert words[0] == "gradscope", command.text
    argv: list[str] = []
    for i, word in enumerate(words[1:], 1):
        if words[i - 1] in (*WRITES, "--baseline"):  # the baseline written just before
            word = str(tmp / Path(word).name)
        if any(c in word for c in "*?["):
            argv += sorted(str(p.relative_to(cwd)) for p in cwd.glob(word))
        else:
            argv.append(word)
    return argv, cwd


def _normal(text: str) -> str:
    return " ".join(text.split())


@pytest.fixture(scope="module")
def scratch(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("readme")


def test_readme_has_the_commands_it_should() -> None:
    texts = [c.text for c in COMMANDS]
    assert "gradscope check configs/two-heads.yaml" in texts
    assert "gradscope validate docs/broken.yaml" in texts
    assert len(COMMANDS) >= 12


_NEEDS_DOT = pytest.mark.skipif(
    graphviz.find() is None, reason="Graphviz's dot is not installed (apt-get install graphviz)"
)


def _param(c: Command) -> object:
    """A command as a test case; a ``--strategy`` run needs the logical CPU devices that
    ``replicas`` tests get before TensorFlow starts (``tests/conftest.py``)."""
    marks = [pytest.mark.replicas] if "--strategy" in c.text else []
    if re.search(r"gradscope graph .*\.(svg|png)\b", c.text):  # laid out by Graphviz's dot
        marks.append(_NEEDS_DOT)
    return pytest.param(c, id=f"line{c.line}", marks=marks)


@pytest.mark.parametrize("command", [_param(c) for c in COMMANDS])
def test_readme_command_runs_as_printed(command: Command, scratch: Path) -> None:
    argv, cwd = _argv(command, scratch)
    result = run_in_process(*argv, cwd=cwd, env={"COLUMNS": "120"} | _environment())
    expected = EXIT.get(command.text, 0)
    assert result.returncode == expected, f"README line {command.line}: {result.stderr}"
    assert "Traceback" not in result.stderr
    output = _normal(result.stdout + "\n" + result.stderr)
    for shown in command.shown:
        if shown.strip() in ("...", "…") or re.fullmatch(r"\s*\.\.\.\s*", shown):
            continue
        assert _normal(shown) in output, (
            f"README line {command.line}: `{command.text}` does not print\n{shown}\n"
            f"it prints:\n{result.stdout}{result.stderr}"
        )


def _environment() -> dict[str, str]:
    import os

    return {k: v for k, v in os.environ.items() if k != "NO_COLOR"}
