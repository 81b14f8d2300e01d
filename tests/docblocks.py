"""The code blocks of the README and the documentation site, as tests run them.

Every fenced block is one of these, by its language:

- ``console``: ``$ command`` lines, each followed by the output it shows (``...`` stands for
  lines left out). Every shown line must appear in the real output.
- ``sh``: one command per line (``#`` starts a comment); no output shown.
- ``python``: a program, executed; or a file shown with ``--8<-- "path"`` (pymdownx.snippets),
  which some command of the pages must run.
- ``yaml``: a spec (``gradscope: 1``), validated; a GitHub Actions workflow, whose ``run:``
  commands are commands as above; a pre-commit config, whose hooks must exist.
- ``json``: parsed.
- ``text``: output shown beside a command; it must appear in that command's output.

A command is ``gradscope ...`` (run in the test process, so TensorFlow is imported once),
``cd DIR && gradscope ...``, ``python FILE ...`` (a subprocess, bounded in time), or one of
:data:`NOT_RUN`, each with the reason it cannot run in the suite. Anything else fails: nothing
is skipped silently.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

#: Commands the pages show that the suite does not run, and why. Each must appear in a page.
NOT_RUN = {
    "pip install .": "installs gradscope: `make` runs `pip install -e '.[dev]'` before the suite",
    "python -m venv .venv && . .venv/bin/activate": "makes the reader's virtual environment",
    "make demo": "makes .venv and installs gradscope, as `make test` did before the suite ran",
    "make test": "the suite itself: it would run itself",
    "pip install ./gradscope": "a CI job's install from a copy of gradscope's source",
    ".venv/bin/pip install 'tensorflow[and-cuda]'": "TensorFlow's GPU build: no GPU here",
    'make bench BENCH_ARGS="--device gpu"': "benchmarks on a GPU: no GPU here",
    "KERAS_BACKEND=jax gradscope run docs/examples/keras_jax.py": "Keras on JAX needs a "
    "process of its own (the backend is read at Keras' first import): the JAX process of "
    "tests/frontends/program/test_jax_doors.py runs it, and test_guide_shows_what_jax_reports "
    "checks the page's output against it",
    "KERAS_BACKEND=torch gradscope run train.py": "train.py stands for any program importing "
    "Keras, and PyTorch is not installed here: tests/frontends/test_backend.py "
    "(test_keras_on_pytorch_is_refused_before_the_program_runs) checks the line word for word",
    "pip install 'gradscope-tf[mcp]'": "installs the mcp extra (make installs the dev extra)",
    "gradscope mcp --root .": "a server that runs until its client ends it: tests/cli/test_mcp.py "
    "runs it with the mcp SDK's own client",
    "claude mcp add gradscope -- gradscope mcp --root .": "registers the server in Claude Code",
    "gradscope fix --check train.py": "runs the reader's train.py twice: tests/test_prove.py "
    "proves a program so, its runs forked from a warm process",
}

#: Commands' exit codes where the page says one. Any other command may exit 0 or 1 (it ran and
#: answered; 1: it found problems, as a broken example should); never 2, 3 or 4.
EXIT = {
    "gradscope check configs/two-heads.yaml": 1,
    "gradscope check configs/*.yaml": 1,
    "gradscope check configs/*.yaml --write-baseline gradscope-baseline.json": 1,
    "gradscope validate docs/broken.yaml": 2,
    "gradscope inspect no/such.yaml --format json": 2,
    "gradscope check configs/global-batch.yaml --strategy mirrored --replicas 2": 1,
    "gradscope run docs/examples/gan.py": 1,
    "gradscope run --steps 3 --every 1 --timeline grads.json docs/examples/gan.py": 1,
    "gradscope check --timeline grads.json": 1,
    "cd tests/frontends/program/programs && gradscope run --replicas 2 mirrored_loop.py --mask": 1,
    "gradscope check docs/examples/*.gradscope.yaml --format github": 1,
    "gradscope run docs/examples/no_gradients.py": 4,
    "cd tests/frontends/program/programs && gradscope run dqn_asks_target_fn.py": 4,
    "gradscope check docs/examples/first.gradscope.yaml": 1,
    "pytest --gradscope docs/examples/test_training.py": 1,
    "cd tests/frontends/program/programs && gradscope run fit_missing_loss.py": 1,
    "cd tests/frontends/program/programs && gradscope run unfreeze.py": 1,
    "gradscope check docs/examples/*.gradscope.yaml --format sarif --output gradscope.sarif": 1,
}

#: Options whose value is a file the command writes (moved to a scratch folder).
WRITES = ("-o", "--output", "--write-baseline", "--timeline", "--tensorboard")


@dataclass
class Command:
    text: str
    line: int
    shown: list[str] = field(default_factory=list)  # the output the page prints


@dataclass
class Block:
    path: Path
    line: int  # of the opening fence
    lang: str
    text: str
    include: Path | None = None  # a ``--8<--`` file shown in the block
    commands: list[Command] = field(default_factory=list)

    @property
    def id(self) -> str:
        return f"{self.path.relative_to(ROOT)}:{self.line}"


_INCLUDE = re.compile(r'^--8<-- "([^"]+)"$')


def blocks(path: Path) -> list[Block]:
    """The fenced blocks of a Markdown file, in order (indented fences count: tabs, admonitions)."""
    found: list[Block] = []
    lines = path.read_text(encoding="utf-8").splitlines()
    i = 0
    while i < len(lines):
        match = re.match(r"^(\s*)(```+)\s*([\w+-]*)", lines[i])
        if not match:
            i += 1
            continue
        indent, fence, lang = match.groups()
        body: list[str] = []
        start = i + 1
        i += 1
        while i < len(lines) and not lines[i].strip().startswith(fence):
            body.append(lines[i][len(indent) :] if lines[i].startswith(indent) else lines[i])
            i += 1
        i += 1
        block = Block(path, start, lang or "text", "\n".join(body) + "\n")
        included = _INCLUDE.match(block.text.strip())
        if included:
            block.include = ROOT / included.group(1)
            block.text = block.include.read_text(encoding="utf-8")
        block.commands = _commands(block, start)
        found.append(block)
    return found


def _commands(block: Block, start: int) -> list[Command]:
    commands: list[Command] = []
    if block.lang == "console":
        for number, line in enumerate(block.text.splitlines(), start + 1):
            if line.startswith("$ "):
                commands.append(Command(line[2:].strip(), number))
            elif commands and line.strip():
                commands[-1].shown.append(line)
    elif block.lang in ("sh", "bash"):
        for number, line in enumerate(block.text.splitlines(), start + 1):
            text = re.split(r"\s+#", line)[0].strip()
            if text and not text.startswith("#"):
                commands.append(Command(text, number))
    return commands


def pages() -> list[Path]:
    """README.md and every page of the site."""
    return [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]


def argv(text: str, scratch: Path) -> tuple[list[str], Path]:
    """The words of a command (globs expanded, written files moved to ``scratch``), and the
    folder it runs in (``cd X && ...``)."""
    cwd = ROOT
    if text.startswith("cd "):
        folder, _, text = text[3:].partition(" && ")
        cwd = ROOT / folder
    words = shlex.split(text)
    out: list[str] = []
    for i, word in enumerate(words):
        if i and words[i - 1] in WRITES:  # a file the command writes
            word = str(scratch / Path(word).name)
        elif not (cwd / word).exists() and (scratch / word).exists():  # one written before
            word = str(scratch / word)
        if any(c in word for c in "*?[") and not word.startswith("-"):
            out += sorted(str(p.relative_to(cwd)) for p in cwd.glob(word))
        else:
            out.append(word)
    return out, cwd


def normal(text: str) -> str:
    return " ".join(text.split())


def missing(shown: list[str], output: str) -> list[str]:
    """The shown lines the real output does not have (``...`` lines stand for any)."""
    real = normal(output)
    return [s for s in shown if s.strip() not in ("...", "…") and normal(s) not in real]
