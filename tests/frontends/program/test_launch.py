"""Starting the program as ``python`` would: directories, packages, and what ``python`` says
when it cannot (no TensorFlow needed: ``launch`` runs the program unwatched here)."""

from __future__ import annotations

import contextlib
import io
import os
import subprocess
import sys
from pathlib import Path

import pytest

from gradscope._src.results import run as rr
from gradscope._src.watch import launch
from gradscope._src.watch.launch import Program, ProgramError
from tests.conftest import Processes


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


_SHOWS = """\
import sys, statistics, click, runpy
print(repr(__file__), repr(sys.path[0]), sys.argv, __spec__, type(__builtins__).__name__)
print(statistics.WHO, click.WHO, getattr(runpy, "WHO", "the standard runpy"))
"""


def _in_process(program: Program) -> tuple[str, BaseException | None, str]:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        outcome, error = launch.execute(program)
    return outcome, error, out.getvalue()


@pytest.mark.parametrize("given", ["real/shows.py", "link.py", "reallink/shows.py"])
def test_file_path0_argv_and_shadowing_modules_are_pythons(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, given: str
) -> None:
    """``__file__`` absolute, ``sys.path[0]`` the script's real folder (links resolved), and
    the program's own ``statistics.py`` beside it, though gradscope's process imported the
    standard one first."""
    import statistics  # noqa: F401  (modules a program's own files must shadow)

    import click  # noqa: F401

    (tmp_path / "real").mkdir()
    (tmp_path / "real" / "shows.py").write_text(_SHOWS, encoding="utf-8")
    for name in ("statistics", "click", "runpy"):
        (tmp_path / "real" / f"{name}.py").write_text(f"WHO = '{name}'\n", encoding="utf-8")
    (tmp_path / "link.py").symlink_to(tmp_path / "real" / "shows.py")
    (tmp_path / "reallink").symlink_to(tmp_path / "real")
    python = _python(given, "a", cwd=tmp_path)
    assert python.returncode == 0, python.stderr
    monkeypatch.chdir(tmp_path)
    assert _in_process(Program(given, ("a",))) == (rr.FINISHED, None, python.stdout)
    assert "statistics click" in python.stdout
    for name in ("statistics", "click", "runpy"):  # gradscope's own, back after the run
        assert not hasattr(sys.modules[name], "WHO")


_DEEP = """\
import sys
def down(n):
    try:
        return down(n + 1)
    except RecursionError:
        return n
print(sys.getrecursionlimit(), down(1))
sys.setrecursionlimit(2000)
print(sys.getrecursionlimit(), down(1))
"""


@pytest.mark.parametrize("how", ["script", "directory", "module"])
def test_the_program_recurses_as_deep_as_under_python(
    gradscope_processes: Processes, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, how: str
) -> None:
    (tmp_path / "deepdir").mkdir()
    (tmp_path / "deepdir" / "__main__.py").write_text(_DEEP, encoding="utf-8")
    (tmp_path / "deep.py").write_text(_DEEP, encoding="utf-8")
    args, program = {"script": (["deep.py"], Program("deep.py", ())),
                     "directory": (["deepdir"], Program("deepdir", ())),
                     "module": (["-m", "deep"], Program("deep", (), module=True))}[how]  # fmt: skip
    python = _python(*args, cwd=tmp_path)
    assert python.returncode == 0, python.stderr
    # as a user runs it, in a process of its own (forked, as python -m gradscope runs): the
    # depth a test worker stands on (and what earlier tests in it left) is no part of what
    # gradscope promises
    watched = gradscope_processes(["run", *args], tmp_path, os.environ)
    assert (watched.returncode, watched.stdout) == (0, python.stdout), watched.stderr
    monkeypatch.chdir(tmp_path)
    limit = sys.getrecursionlimit()
    assert _in_process(program)[0] == rr.FINISHED  # in process too, the limit put back
    assert sys.getrecursionlimit() == limit


@pytest.mark.parametrize("source", [b"# caf\xe9\nprint(1)\n", b"x = '\xe9'\n"])
def test_a_file_python_refuses_to_decode_is_refused(tmp_path: Path, source: bytes) -> None:
    (tmp_path / "latin.py").write_bytes(source)
    python = _python("latin.py", cwd=tmp_path)
    assert python.returncode == 1 and "SyntaxError: Non-UTF-8 code" in python.stderr
    with pytest.raises(ProgramError) as caught:
        launch.check(Program(str(tmp_path / "latin.py"), ()))
    said = python.stderr.strip().splitlines()[-1].replace(str(tmp_path / "latin.py"), "{}")
    assert str(caught.value).endswith(said.format(tmp_path / "latin.py"))
    (tmp_path / "declared.py").write_bytes(b"# -*- coding: latin-1 -*-\n" + source)
    launch.check(Program(str(tmp_path / "declared.py"), ()))  # declared: Python runs it


@pytest.mark.parametrize("code", ["256", "-1", "2**70", "257", "True", "'m'", "None"])
def test_exit_status_is_the_one_the_parent_sees(tmp_path: Path, code: str) -> None:
    (tmp_path / "ends.py").write_text(f"import sys\nsys.exit({code})\n", encoding="utf-8")
    python = _python("ends.py", cwd=tmp_path)
    assert launch.exit_status(SystemExit(eval(code))) == python.returncode


def test_a_program_in_a_folder_it_removed_ends_as_under_python(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "work").mkdir()
    (tmp_path / "rm.py").write_text(
        "import os\nos.chdir('work'); os.rmdir(os.path.abspath('.'))\nprint(__file__)\n"
        "raise ValueError('late')\n",
        encoding="utf-8",
    )
    python = _python("rm.py", cwd=tmp_path)
    (tmp_path / "work").mkdir()
    monkeypatch.chdir(tmp_path)
    outcome, error, out = _in_process(Program("rm.py", ()))
    assert (outcome, out) == (rr.RAISED, python.stdout)
    said = io.StringIO()
    launch.print_failure(error, Program("rm.py", ()), said)  # type: ignore[arg-type]
    assert said.getvalue() == python.stderr


def test_the_programs_own_excepthook_prints_its_failure(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "hooked.py").write_text(
        "import sys\n"
        "sys.excepthook = lambda t, e, tb: print('custom:', t.__name__, e, file=sys.stderr)\n"
        "raise ValueError('bad')\n",
        encoding="utf-8",
    )
    python = _python("hooked.py", cwd=tmp_path)
    assert (python.returncode, python.stderr) == (1, "custom: ValueError bad\n")
    monkeypatch.chdir(tmp_path)
    hook = sys.excepthook
    try:
        outcome, error, _ = _in_process(Program("hooked.py", ()))
        said = io.StringIO()
        launch.print_failure(error, Program("hooked.py", ()), said)  # type: ignore[arg-type]
    finally:
        sys.excepthook = hook
    assert (outcome, said.getvalue()) == (rr.RAISED, python.stderr)
