"""``gradscope run``: the program's own exits (``sys.exit``, ``os._exit``) and what it does to
its streams and working directory, against ``python SCRIPT`` itself."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from gradscope._src.cli import main
from tests.cli.test_run import _validate
from tests.conftest import Drivers, Processes
from tests.forked import Driver, Run

pytestmark = pytest.mark.tf

ROOT = Path(__file__).resolve().parents[2]


def _python(script: Path, cwd: Path) -> subprocess.CompletedProcess[str]:
    """The program as ``python SCRIPT`` runs it: the truth."""
    return subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                          cwd=cwd, timeout=120, check=False)  # fmt: skip


@pytest.fixture
def python(drivers: Drivers) -> Driver:
    """``python SCRIPT`` for the programs that import TensorFlow, forked from one process
    that imported it."""
    return drivers.programs(os.environ)


def _forked(python: Driver, script: Path, cwd: Path) -> Run:
    """``python SCRIPT`` forked by ``python``: the truth, for a program importing TensorFlow."""
    return python.run([str(script)], cwd, os.environ, cwd / "python", kill_after=120)


def _gradscope(processes: Processes, *args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """``gradscope run ARGS`` as a process of its own (forked: its start is not the point)."""
    env = {**os.environ, "PYTHONPATH": str(ROOT), "COLUMNS": "80"}
    return processes(["run", *args], cwd, env)


@pytest.mark.parametrize(
    ("ending", "outcome"),
    [("sys.exit(3)", "exited"), ("sys.exit('fatal: no data')", "exited"),
     ("sys.exit(0)", "finished"), ("sys.exit()", "finished"), ("raise SystemExit(True)", "exited")],
)  # fmt: skip
def test_sys_exit_is_the_programs_status_not_a_raise(tmp_path: Path, ending: str,
                                                     outcome: str) -> None:  # fmt: skip
    script = tmp_path / "ends.py"
    script.write_text(f"import sys\nprint('ran')\n{ending}\n", encoding="utf-8")
    python = _python(script, tmp_path)
    result = CliRunner().invoke(main, ["run", "--format", "json", str(script)],
                                catch_exceptions=False)  # fmt: skip
    # the program's status is in the report; gradscope's own code keeps the contract's meaning
    assert result.exit_code == (4 if outcome == "exited" else 0)
    assert result.stdout == python.stdout == "ran\n"
    # what Python prints for sys.exit("message"), then the report
    assert result.stderr.startswith(python.stderr)
    report = json.loads(result.stderr[len(python.stderr) :])
    assert report["outcome"] == outcome
    assert report.get("exit_status") == (python.returncode if outcome == "exited" else None)
    assert "traceback" not in result.stderr
    _validate(report)


def test_os_exit_writes_the_report_so_far_then_exits_with_its_status(
    python: Driver, gradscope_processes: Processes, tmp_path: Path
) -> None:
    import tensorflow as tf

    script = tmp_path / "ox.py"
    script.write_text(
        "import os, tensorflow as tf\n"
        "w = tf.Variable([1.0], name='w'); u = tf.Variable([1.0], name='u')\n"
        "with tf.GradientTape() as t:\n"
        "    l = tf.reduce_sum(w * 2.0)\n"
        "g = t.gradient(l, [w, u])\n"
        "os._exit(5)\n",
        encoding="utf-8",
    )
    plain = _forked(python, script, tmp_path)
    done = _gradscope(
        gradscope_processes, "--format", "json", "-o", "report.json", "ox.py", cwd=tmp_path
    )
    assert plain.code == 5 and done.returncode == 4  # the contract's code; 5 is reported
    w, u = tf.Variable([1.0]), tf.Variable([1.0])
    with tf.GradientTape() as tape:
        loss = tf.reduce_sum(w * 2.0)
    bare = tape.gradient(loss, [w, u])
    report = json.loads((tmp_path / "report.json").read_text())
    assert report["outcome"] == "exited" and report["exit_status"] == 5
    (call,) = report["calls"]
    assert call["sources"]["w"]["norm"] == pytest.approx(float(tf.norm(bare[0])))
    assert bare[1] is None and call["sources"]["u"]["status"] == "none:disconnected"
    assert [(p["variable"], p["kind"]) for p in report["problems"]] == [("u", "unexpected-none")]
    _validate(report)


_STREAMS = """\
import os, sys
sys.stderr = open("program.log", "w")
print("to the log", file=sys.stderr)
os.chdir("elsewhere")
print("chdir done")
sys.stdout.close()
"""


@pytest.mark.parametrize("output", [None, "report.json"])
def test_a_program_closing_replacing_its_streams_and_moving_leaves_gradscopes_alone(
    gradscope_processes: Processes, tmp_path: Path, output: str | None
) -> None:
    (tmp_path / "elsewhere").mkdir()
    script = tmp_path / "streams.py"
    script.write_text(_STREAMS, encoding="utf-8")
    python = _python(script, tmp_path)
    assert (python.returncode, python.stdout) == (0, "chdir done\n")
    (tmp_path / "program.log").unlink()
    args = ("--format", "json", *(("-o", output) if output else ()), "streams.py")
    done = _gradscope(gradscope_processes, *args, cwd=tmp_path)
    assert (done.returncode, done.stdout) == (0, python.stdout)
    assert (tmp_path / "program.log").read_text() == "to the log\n"  # the program's only
    if output:  # against gradscope's working directory, not the program's last one
        assert not (tmp_path / "elsewhere" / output).exists()
        report = json.loads((tmp_path / output).read_text())
    else:
        report = json.loads(done.stderr[done.stderr.index("{") :])
    assert report["outcome"] == "finished" and report["calls"] == []


@pytest.mark.parametrize(("sources", "code"), [("[w]", 0), ("[w, u]", 1)])
def test_os_exit_0_is_a_program_that_ran_to_its_end(python: Driver,
                                                     gradscope_processes: Processes,
                                                     tmp_path: Path, sources: str,
                                                     code: int) -> None:  # fmt: skip
    """``os._exit(0)`` ends a program as returning does: exit 0 or 1 by the problems (a
    None for ``u``, which the loss does not read), outcome ``finished``, no ``exit_status``."""
    script = tmp_path / "ox0.py"
    script.write_text(
        "import os, tensorflow as tf\n"
        "w = tf.Variable([1.0], name='w'); u = tf.Variable([1.0], name='u')\n"
        "with tf.GradientTape() as t:\n"
        "    l = tf.reduce_sum(w * 2.0)\n"
        f"g = t.gradient(l, {sources})\n"
        "print('bye', flush=True)\n"
        "os._exit(0)\n",
        encoding="utf-8",
    )
    plain = _forked(python, script, tmp_path)
    done = _gradscope(
        gradscope_processes, "--format", "json", "-o", "report.json", "ox0.py", cwd=tmp_path
    )
    assert plain.code == 0 and done.returncode == code
    assert done.stdout == plain.stdout == "bye\n"
    report = json.loads((tmp_path / "report.json").read_text())
    assert report["outcome"] == "finished" and "exit_status" not in report
    assert len(report["problems"]) == code
    _validate(report)


@pytest.mark.parametrize(
    ("ending", "code"),
    [("pass", 1), ("raise ValueError('no data')", 4), ("raise KeyboardInterrupt", 130),
     ("import sys; sys.exit(3)", 4)],
)  # fmt: skip
def test_sarif_exit_code_is_the_one_run_returns(tmp_path: Path, ending: str, code: int) -> None:
    """The SARIF invocation's ``exitCode`` is gradscope run's own exit code (contract section
    6), not the findings' 0 or 1: a program that raised is 4 and an interrupted one 130 though
    both have a problem (a None for ``u``, which the loss does not read)."""
    script = tmp_path / "ends.py"
    script.write_text(
        "import tensorflow as tf\n"
        "w = tf.Variable([1.0], name='w'); u = tf.Variable([1.0], name='u')\n"
        "with tf.GradientTape() as t:\n"
        "    l = tf.reduce_sum(w * 2.0)\n"
        "g = t.gradient(l, [w, u])\n"
        f"{ending}\n",
        encoding="utf-8",
    )
    out = tmp_path / "run.sarif"
    result = CliRunner().invoke(main, ["run", "--format", "sarif", "-o", str(out), str(script)],
                                catch_exceptions=False)  # fmt: skip
    assert result.exit_code == code
    (run,) = json.loads(out.read_text(encoding="utf-8"))["runs"]
    (invocation,) = run["invocations"]
    assert invocation["exitCode"] == result.exit_code
    assert [r["ruleId"] for r in run["results"]] == ["unexpected-none"]
