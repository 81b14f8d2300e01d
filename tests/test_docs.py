"""Every code block of the README and the documentation site runs, and says what the page shows.

One test per block (``tests/docblocks.py`` says how each language is run). gradscope commands
and Python blocks run in this process, so the suite imports TensorFlow once per worker; a
``python FILE`` or ``pytest`` command is a subprocess bounded in time. A command the suite
cannot run is listed in ``docblocks.NOT_RUN`` with the reason, and a test fails for a block it
has no rule for: nothing is skipped silently.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from gradscope._src.report import graphviz
from tests import docblocks
from tests.conftest import ROOT, Processes, run_in_process

BLOCKS = [b for page in docblocks.pages() for b in docblocks.blocks(page)]
COMMANDS = [c.text for b in BLOCKS for c in b.commands]
#: Commands of the current page not run for want of Graphviz's dot (the page then skips, saying so).
_NOT_DRAWN: list[str] = []
#: Pages generated from files other tests run: each page's test is that it is up to date.
GENERATED = {
    "docs/reference/causes-and-fixes.md": [
        "scripts/gen_causes.py",
        "--check",
    ],  # its programs: tests/analysis/test_fixes_proven.py
}
#: Folders a Python block may read, linked into its scratch folder (where it writes).
LINKED = ("configs", "docs", "tests", "schema")


def _param(page: Path) -> object:
    blocks = docblocks.blocks(page)
    text = " ".join(b.text + " ".join(c.text for c in b.commands) for b in blocks)
    marks: list[pytest.MarkDecorator] = []
    if any(b.lang != "json" and b.include is None for b in blocks):
        marks.append(pytest.mark.tf)
    if "--strategy" in text or "--replicas" in text:
        marks.append(pytest.mark.replicas)
    return pytest.param(page, id=str(page.relative_to(ROOT)), marks=marks)


def _environment() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if k != "NO_COLOR"} | {"COLUMNS": "120"}


def _needs_dot(text: str) -> bool:
    return bool(re.search(r"gradscope graph .*\.(svg|png|html)\b", text))


#: ``python -m pytest ARGS`` (the working directory first on ``sys.path``), as a script a
#: ``programs`` driver runs
PYTEST_MAIN = (
    "import os, sys\nsys.path[0] = os.getcwd()\nimport pytest\nsys.exit(pytest.console_main())\n"
)


def _run(command: docblocks.Command, scratch: Path, where: str, processes: Processes,
         python: Processes) -> None:  # fmt: skip
    """Run one command of a page and compare what it prints with what the page shows
    (``gradscope run`` with devices of its own: a process of its own, forked; ``python`` and
    ``pytest``: a process of its own, forked from one that imported TensorFlow, which each
    program and test file the pages run imports first thing)."""
    if command.text in docblocks.NOT_RUN:
        return
    if _needs_dot(command.text) and graphviz.find() is None:
        _NOT_DRAWN.append(f"{where}: {command.text}")
        return
    words, cwd = docblocks.argv(command.text, scratch)
    allowed = {docblocks.EXIT[command.text]} if command.text in docblocks.EXIT else {0, 1}
    own_devices = words[:2] == ["gradscope", "run"] and (
        "--replicas" in words or "--strategy" in words
    )
    if words[0] == "gradscope" and not own_devices:
        result = run_in_process(*words[1:], cwd=cwd, env=_environment())
    elif words[0] == "gradscope":  # a program's devices are made at its start
        result = processes(words[1:], cwd, _environment() | {"PYTHONPATH": str(ROOT)})
    elif words[0] in ("python", "pytest"):
        program: list[str] = []
        if words[0] == "pytest":
            main = scratch / "pytest_main.py"
            main.write_text(PYTEST_MAIN, encoding="utf-8")
            program = [str(main)]
        extra = ["-q", "-p", "no:cacheprovider"] if words[0] == "pytest" else []
        env = _environment() | {"PYTHONPATH": str(ROOT)}
        result = python([*program, *words[1:], *extra], cwd, env, kill_after=240)
    else:
        pytest.fail(f"{where}: no rule runs `{command.text}` (list it in docblocks.NOT_RUN?)")
    output = result.stdout + "\n" + result.stderr
    assert result.returncode in allowed, (
        f"{where}: `{command.text}` exited {result.returncode}:\n{output}"
    )
    assert "Traceback" not in output or allowed == {4}, f"{where}: {output}"
    lost = docblocks.missing(command.shown, output)
    assert not lost, f"{where}: `{command.text}` does not print\n{lost[0]}\nit prints:\n{output}"


def _exec_python(block: docblocks.Block, scratch: Path) -> None:
    for name in LINKED:
        if not (scratch / name).exists():
            (scratch / name).symlink_to(ROOT / name)
    here = os.getcwd()
    os.chdir(scratch)
    printed = io.StringIO()
    try:
        with contextlib.redirect_stdout(printed):
            exec(compile(block.text, block.id, "exec"), {"__name__": "__main__"})
    finally:
        os.chdir(here)


def _ipython(block: docblocks.Block) -> None:
    """A notebook cell, magics included, run by IPython in this process (one shell for all)."""
    from IPython.core.interactiveshell import InteractiveShell

    shell = InteractiveShell.instance()
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        result = shell.run_cell(block.text, store_history=False)
    assert result.success, f"{block.id}: {result.error_before_exec or result.error_in_exec}"
    if block.text.startswith("%%gradscope"):  # the magic showed the cell's report
        assert "gradscope watch" in printed.getvalue(), f"{block.id}: {printed.getvalue()}"


def _yaml(block: docblocks.Block, scratch: Path, processes: Processes,
          python: Processes) -> None:  # fmt: skip
    data = yaml.safe_load(block.text)
    assert isinstance(data, dict), f"{block.id}: not a YAML mapping"
    if "gradscope" in data:
        spec = scratch / "spec.yaml"
        spec.write_text(block.text, encoding="utf-8")
        result = run_in_process("validate", str(spec))
        assert result.returncode == 0, f"{block.id}: {result.stdout}{result.stderr}"
    elif "jobs" in data:
        for job in data["jobs"].values():
            for step in job["steps"]:
                for line in str(step.get("run", "")).splitlines():
                    _run(
                        docblocks.Command(line.split("  #")[0].strip(), block.line),
                        scratch,
                        block.id,
                        processes,
                        python,
                    )
    elif "repos" in data:
        ours = {h["id"] for h in yaml.safe_load((ROOT / ".pre-commit-hooks.yaml").read_text())}
        used = {h["id"] for repo in data["repos"] for h in repo["hooks"]}
        assert used <= ours, f"{block.id}: no such hook: {used - ours}"
    else:
        pytest.fail(f"{block.id}: a YAML block that is no spec, workflow or pre-commit config")


@pytest.mark.parametrize("page", [_param(p) for p in docblocks.pages()])
def test_page_blocks_run_as_shown(
    gradscope_processes: Processes, python_processes: Processes, page: Path, tmp_path: Path
) -> None:
    """A page's blocks, in order, in one scratch folder: a file one block writes, the next reads."""
    generator = GENERATED.get(str(page.relative_to(ROOT)))
    if generator is not None:
        done = subprocess.run(
            [sys.executable, *generator], cwd=ROOT, capture_output=True, text=True, timeout=120
        )
        assert done.returncode == 0, f"{page}: {done.stdout}{done.stderr}"
        return
    _NOT_DRAWN.clear()
    for block in docblocks.blocks(page):
        _check(block, tmp_path, gradscope_processes, python_processes)
    if _NOT_DRAWN:  # everything else on the page ran and held
        pytest.skip(f"Graphviz's dot is not installed (apt-get install graphviz): {_NOT_DRAWN}")


def _check(block: docblocks.Block, tmp_path: Path, processes: Processes,
           python: Processes) -> None:  # fmt: skip
    if block.lang in ("console", "sh", "bash"):
        assert block.commands, f"{block.id}: a {block.lang} block with no command"
        for command in block.commands:
            _run(command, tmp_path, f"{block.id} (line {command.line})", processes, python)
    elif block.lang == "python" and block.include is not None:
        shown = str(block.include.relative_to(ROOT))
        assert any(shown in c or block.include.name in c for c in COMMANDS), (
            f"{block.id}: {shown} is shown, but no command of the pages runs it"
        )
    elif block.lang == "python":
        _exec_python(block, tmp_path)
    elif block.lang == "yaml":
        _yaml(block, tmp_path, processes, python)
    elif block.lang == "ipython":
        _ipython(block)
    elif block.lang == "json":
        json.loads(block.text)
    else:
        pytest.fail(f"{block.id}: no rule tests a `{block.lang}` block")


def test_every_command_not_run_is_still_shown() -> None:
    """NOT_RUN and EXIT name only commands a page shows (a stale entry hides nothing)."""
    workflow = " ".join(b.text for b in BLOCKS if b.lang == "yaml")
    for text in (*docblocks.NOT_RUN, *docblocks.EXIT):
        assert text in COMMANDS or text in workflow, f"no page shows `{text}`"
