"""Starting the program as ``python`` would: directories, packages, and what ``python`` says
when it cannot (no TensorFlow needed: ``launch`` runs the program unwatched here)."""

from __future__ import annotations

import contextlib
import io
import subprocess
import sys
from pathlib import Path

import pytest

from gradscope.frontends.program import launch
from gradscope.frontends.program.launch import Program, ProgramError
from gradscope.results import run as rr


def _python(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, *args], capture_output=True, text=True, cwd=cwd,
                          timeout=60, check=False)  # fmt: skip


def test_a_directory_with_main_runs_as_python_runs_it(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    (tmp_path / "app").mkdir()
    (tmp_path / "app" / "helper.py").write_text("WHO = 'helper'\n", encoding="utf-8")
    (tmp_path / "app" / "__main__.py").write_text(
        "import sys, helper\nprint(sys.argv, helper.WHO, __name__)\n", encoding="utf-8"
    )
    python = _python("app", "x", cwd=tmp_path)
    assert python.returncode == 0
    monkeypatch.chdir(tmp_path)
    program = Program("app", ("x",))
    launch.check(program)
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert launch.execute(program) == (rr.FINISHED, None)
    assert out.getvalue() == python.stdout == "['app', 'x'] helper __main__\n"


def test_what_python_cannot_run_is_refused_in_its_words(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    (tmp_path / "empty").mkdir()
    (tmp_path / "mypk").mkdir()
    (tmp_path / "mypk" / "__init__.py").write_text("", encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    for args, program in ((["empty"], Program("empty", ())),
                          (["-m", "mypk"], Program("mypk", (), module=True))):  # fmt: skip
        python = _python(*args, cwd=tmp_path)
        assert python.returncode != 0
        said = python.stderr.strip().split(": ", 1)[1]  # after "/path/to/python: "
        with pytest.raises(ProgramError) as caught:
            launch.check(program)
        assert str(caught.value).lower() == f"gradscope run: {said}".lower()
