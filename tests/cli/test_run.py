"""``gradscope run`` on the command line: exit codes, where output goes, formats, bad input."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from click.testing import CliRunner

from gradscope._src.cli import main
from tests.frontends.program.test_run import PROGRAMS, line_of, unwatched

tf_mark = pytest.mark.tf


def _invoke(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(main, ["run", *args], catch_exceptions=False)
    return result.exit_code, result.stdout, result.stderr


def _validate(data: dict) -> None:
    """The run report against schema/run-v1.json (which refers to report-v1.json)."""
    jsonschema = pytest.importorskip("jsonschema")
    referencing = pytest.importorskip("referencing")
    root = Path(__file__).resolve().parents[2] / "schema"
    schemas = [json.loads((root / n).read_text()) for n in ("run-v1.json", "report-v1.json")]
    registry = referencing.Registry().with_resources(
        [(s["$id"], referencing.Resource.from_contents(s)) for s in schemas]
    )
    jsonschema.Draft202012Validator(schemas[0], registry=registry).validate(data)


def _program(name: str) -> str:
    return str(PROGRAMS / name)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["no-such-train.py"], "gradscope run: no-such-train.py: no such file"),
        (["-m", "no_such_module_xyz"], "gradscope run: no module named 'no_such_module_xyz'"),
        ([], "gradscope run: give a SCRIPT to run, or -m MODULE"),
    ],
)
def test_run_cannot_start_is_exit_2_in_one_line(args: list[str], message: str) -> None:
    code, out, err = _invoke(*args)
    assert (code, out, err.strip()) == (2, "", message)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--strategy", "multiworker"], "gradscope run: --strategy multiworker: a program's "
         "MultiWorkerMirroredStrategy reads its cluster from the TF_CONFIG its own launcher"),
        (["--strategy", "default", "--replicas", "2"],
         "gradscope run: --replicas 2 needs --strategy mirrored, or no --strategy"),
    ],
)  # fmt: skip
def test_run_strategy_it_cannot_give_a_program_is_exit_2_in_one_line(
    args: list[str], message: str
) -> None:
    code, out, err = _invoke(*args, _program("clean_loop.py"))
    assert (code, out) == (2, "") and err.startswith(message) and err.count("\n") == 1


def test_run_syntax_error_is_exit_2_at_its_line(tmp_path: Path) -> None:
    script = tmp_path / "broken.py"
    script.write_text("import os\nx = (\n", encoding="utf-8")
    code, out, err = _invoke(str(script))
    assert code == 2 and out == ""
    assert err.strip() == f"gradscope run: {script}:2:5: SyntaxError: '(' was never closed"


def test_run_help_shows_an_example_without_tensorflow() -> None:
    code = ("import sys\nfrom gradscope._src.cli import main\ntry:\n    main(['run', '--help'])\n"
            "except SystemExit:\n    pass\nprint('tensorflow' in sys.modules)")  # fmt: skip
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          check=False)  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "gradscope run train.py --epochs 1" in done.stdout
    assert "4    the program raised" in done.stdout
    assert done.stdout.strip().endswith("False")  # --help never imports TensorFlow


@tf_mark
def test_run_clean_program_exits_0_report_on_stderr_only() -> None:
    code, out, err = _invoke("--continue", _program("clean_loop.py"))
    assert code == 0
    assert out == unwatched("clean_loop.py")  # stdout is the program's, untouched
    assert "GradientTape.gradient (eager) · step 1" in err
    assert "0 problems · the program ran to its end" in err


@tf_mark
def test_run_program_that_raises_prints_its_traceback_then_the_report() -> None:
    code, out, err = _invoke(_program("raises.py"))
    assert code == 4
    assert out == "grad [2. 4.]\n"
    traceback_at = err.index("Traceback (most recent call last):")
    first_frame = err[traceback_at:].splitlines()[1]
    assert first_frame.strip().startswith(f'File "{_program("raises.py")}", line 15')
    # every frame is the program's own: none of gradscope's (whatever the clone's folder is
    # called: a checkout named `gradscope` has the word in every path)
    frames = re.findall(r'File "([^"]+)"', err[traceback_at : err.index("ValueError")])
    assert frames and set(frames) == {_program("raises.py")}, frames
    assert err.index("ValueError: the data loader is empty") < err.index("gradscope run ·")
    assert "the program raised" in err


@tf_mark
def test_run_interrupted_program_exits_130(tmp_path: Path) -> None:
    script = tmp_path / "interrupt.py"
    script.write_text("raise KeyboardInterrupt\n", encoding="utf-8")
    code, _, err = _invoke(str(script))
    assert code == 130 and "interrupted" in err


@tf_mark
def test_run_module_with_its_argv(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "mytrain.py").write_text(
        "import sys\nimport tensorflow as tf\nprint(sys.argv[1:], __name__)\n"
        "w = tf.Variable(3.0, name='w')\nwith tf.GradientTape() as t:\n"
        "    loss = w * w\nprint(float(t.gradient(loss, w)))\n",
        encoding="utf-8",
    )
    monkeypatch.chdir(tmp_path)
    code, out, _ = _invoke("--output", "-", "--format", "json", "-m", "mytrain", "--lr", "1")
    printed, report = out.split("\n", 2)[:2], json.loads(out.split("\n", 2)[2])
    assert code == 0
    assert printed == ["['--lr', '1'] __main__", "6.0"]
    assert report["argv"][1:] == ["--lr", "1"]
    assert report["calls"][0]["sources"]["w"]["norm"] == pytest.approx(6.0)
    _validate(report)


@pytest.fixture(scope="module")
def assign_outputs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[int, str]]:
    out = {}
    folder = tmp_path_factory.mktemp("formats")
    for fmt in ("json", "junit", "sarif", "github", "markdown"):
        path = folder / f"report.{fmt}"
        code, _, _ = _invoke("--format", fmt, "--output", str(path), _program("seed003_assign.py"))
        out[fmt] = (code, path.read_text(encoding="utf-8"))
    return out


@tf_mark
def test_run_formats_report_the_assign_problem(assign_outputs: dict[str, tuple[int, str]]) -> None:
    assert {code for code, _ in assign_outputs.values()} == {1}
    report = json.loads(assign_outputs["json"][1])
    _validate(report)
    assert list(report) == ["gradscope", "program", "argv", "tensorflow", "device", "outcome",
                            "calls", "problems"]  # fmt: skip
    (problem,) = report["problems"]
    assert problem["kind"] == "unexpected-none"
    line = line_of("seed003_assign.py", "g.gradient(o, patch)")
    assert problem["site"].endswith(f"seed003_assign.py:{line}")
    suites = ET.fromstring(assign_outputs["junit"][1])
    assert suites.get("failures") == "1"
    sarif = json.loads(assign_outputs["sarif"][1])
    (result,) = sarif["runs"][0]["results"]
    assert result["ruleId"] == "unexpected-none"
    assert result["locations"][0]["physicalLocation"]["region"]["startLine"] == line
    github = assign_outputs["github"][1]
    assert f"line={line},title=gradscope unexpected-none::" in github
    assert "| `Variable@" in assign_outputs["markdown"][1]
    assert suites.get("name") == f"gradscope run {_program('seed003_assign.py')}"
    assert sarif["runs"][0]["automationDetails"]["id"] == "gradscope/run/"
    assert github.splitlines()[0].startswith(
        f"::group::gradscope run {_program('seed003_assign.py')}:"
    )


@tf_mark
def test_run_json_of_a_trainable_flag_changed_after_the_trace_is_valid() -> None:
    """The extended report (``trainable_changed``, ``never-trained``, ``unexpected-connected``)
    holds to schema/run-v1.json."""
    import keras

    keras.backend.clear_session()
    code, out, _ = _invoke("--output", "-", "--format", "json", _program("unfreeze.py"))
    # each fit() line is its own site: the program runs to its end, its print first
    printed, report = out[: out.index("{")], json.loads(out[out.index("{") :])
    assert printed == "changed [False, False, True, True]\n"
    _validate(report)
    assert code == 1
    assert {p["kind"] for p in report["problems"]} == {"never-trained", "unexpected-connected"}
    changed = report["calls"][1]["sources"]
    assert all(s["trainable_changed"] is True for s in changed.values())


@pytest.mark.parametrize(
    ("options", "message"),
    [
        (["--timeline", "afile/t.json"], "--timeline afile/t.json: afile is a file, not a "
         "directory"),
        (["--tensorboard", "afile/tb"], "--tensorboard afile/tb: afile is a file, not a "
         "directory"),
        (["--tensorboard", "afile"], "--tensorboard afile: not a directory"),
        (["--output", "afile/r.json"], "--output afile/r.json: afile is a file, not a directory"),
        (["--output", "none/r.json"], "--output none/r.json: directory none does not exist"),
        (["--timeline", "train.py"], "--timeline train.py: is an input of this command (train.py); "
         "it is never written over"),
        (["--output", "train.py"], "--output train.py: is an input of this command (train.py); it "
         "is never written over"),
        (["--output", "t.json", "--timeline", "t.json"], "--output t.json: is also --timeline; "
         "name two files"),
        (["--output", ""], "--output '': an empty path names no file; give a file path"),
        (["--timeline", ""], "--timeline '': an empty path names no file; give a file path"),
        (["--tensorboard", ""], "--tensorboard '': an empty path names no file; give a "
         "directory path"),
        (["--timeline", "-"], "--timeline -: give a file path (this option does not write to "
         "standard output)"),
    ],
)  # fmt: skip
def test_run_unwritable_output_is_exit_2_before_the_program_starts(
    options: list[str], message: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "afile").write_text("")
    (tmp_path / "train.py").write_text("open('started', 'w').close()\n")
    code, out, err = _invoke("--steps", "4", *options, "train.py")
    assert (code, out, err.strip()) == (2, "", f"gradscope run: {message}")
    assert not (tmp_path / "started").exists()
    assert (tmp_path / "train.py").read_text() == "open('started', 'w').close()\n"
