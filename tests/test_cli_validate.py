"""``gradscope validate`` and friends, run as a user runs them."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from gradscope import __version__
from gradscope._src import cli
from gradscope._src.cli.commands import COMMANDS
from gradscope._src.errors import ExitCode
from gradscope._src.frontends.yaml import spec_schema
from tests.conftest import CONFIGS, ROOT, RunCli

BAD = sorted((ROOT / "tests" / "frontends" / "yaml" / "bad").glob("*.yaml"))
LOCATED = re.compile(r"^(?P<path>.+?):(?P<line>\d+):(?P<column>\d+): \S")


def _header(path: Path) -> tuple[str, int]:
    lines = path.read_bytes().decode("utf-8", "replace").splitlines()
    expect = lines[0].removeprefix("# expect: ")
    line = int(lines[1].removeprefix("# line: "))
    return expect, line


def test_validate_every_config_without_tensorflow(run_cli: RunCli, no_tensorflow: dict[str, str]):
    paths = [str(p.relative_to(ROOT)) for p in CONFIGS]
    result = run_cli("validate", *paths, env=no_tensorflow)
    assert result.returncode == ExitCode.OK, result.stderr
    assert result.stderr == ""
    lines = result.stdout.splitlines()
    assert len(lines) == len(paths) >= 6
    for path, line in zip(paths, lines, strict=True):
        assert re.fullmatch(
            rf"ok  {re.escape(path)} \(\d+ inputs?, \d+ variables?, \d+ nodes?, \d+ loss(es)?\)",
            line,
        )


def test_validate_blocker_really_blocks(run_cli: RunCli, no_tensorflow: dict[str, str]):
    result = subprocess.run(
        [sys.executable, "-c", "import tensorflow"], env=no_tensorflow, capture_output=True
    )
    assert result.returncode != 0


@pytest.mark.parametrize("path", BAD, ids=[p.stem for p in BAD])
def test_validate_bad_spec_exits_2_with_located_line(path: Path, run_cli: RunCli, tmp_path: Path):
    expect, line = _header(path)
    local = tmp_path / path.name
    shutil.copyfile(path, local)
    result = run_cli("validate", path.name, cwd=tmp_path)
    assert result.returncode == ExitCode.USAGE
    assert result.stdout == ""
    assert "Traceback" not in result.stderr
    lines = result.stderr.splitlines()
    assert lines
    for text in lines:
        match = LOCATED.match(text)
        assert match and match["path"] == path.name, text
    assert any(text.startswith(f"{path.name}:{line}:") and expect in text for text in lines), (
        result.stderr
    )
    assert not (tmp_path / "MARKER").exists()


def test_bad_specs_cover_at_least_thirty_cases():
    assert len(BAD) >= 30


@pytest.mark.parametrize("name", ["python-tag.yaml", "denied-op-io.yaml"])
def test_validate_executes_nothing(name: str, run_cli: RunCli, tmp_path: Path):
    shutil.copyfile(ROOT / "tests" / "frontends" / "yaml" / "bad" / name, tmp_path / name)
    text = (tmp_path / name).read_text(encoding="utf-8")
    assert "MARKER" in text  # the spec would create this file if anything ran it
    result = run_cli("validate", name, cwd=tmp_path)
    assert result.returncode == ExitCode.USAGE
    assert not (tmp_path / "MARKER").exists()


def test_validate_directory_missing_and_empty_files(run_cli: RunCli, tmp_path: Path):
    (tmp_path / "adir.yaml").mkdir()
    (tmp_path / "empty.yaml").write_bytes(b"")
    result = run_cli("validate", "adir.yaml", "missing.yaml", "empty.yaml", cwd=tmp_path)
    assert result.returncode == ExitCode.USAGE
    assert result.stderr.splitlines() == [  # no line to point at: the command's own style
        "gradscope validate: adir.yaml: is a directory, expected a YAML spec file",
        "gradscope validate: missing.yaml: no such file",
        "empty.yaml:1:1: the file is empty, expected a mapping with 'gradscope: 1'",
    ]


def test_validate_a_python_target_says_what_validate_does(run_cli: RunCli, no_tensorflow):
    result = run_cli(
        "validate", "tests/frontends/python/data/loose_model.py:build", env=no_tensorflow
    )
    assert result.returncode == ExitCode.USAGE
    assert result.stderr == (
        "gradscope validate: tests/frontends/python/data/loose_model.py:build is a Python target: "
        "validate reads spec files only, without TensorFlow; a target's gradients are checked "
        "by running it: gradscope check tests/frontends/python/data/loose_model.py:build\n"
    )


def test_validate_reports_good_and_bad_files_together(run_cli: RunCli):
    good = str(CONFIGS[0].relative_to(ROOT))
    bad = str(BAD[0].relative_to(ROOT))
    result = run_cli("validate", good, bad)
    assert result.returncode == ExitCode.USAGE
    assert result.stdout.startswith(f"ok  {good} (")
    assert result.stderr.startswith(f"{bad}:")


def test_validate_max_elements_option(run_cli: RunCli, write_spec):
    path = write_spec(
        """\
        gradscope: 1
        inputs:
          x: {shape: [10, 10]}
        nodes:
          - {name: s, op: reduce_sum, inputs: [x]}
        losses: {l: s}
        """
    )
    assert run_cli("validate", path).returncode == ExitCode.OK
    result = run_cli("validate", "--max-elements", "50", path)
    assert result.returncode == ExitCode.USAGE
    assert f"{path}:3:" in result.stderr and "expected at most 50 elements" in result.stderr
    assert run_cli("validate", "--max-elements", "0", path).returncode == ExitCode.USAGE


def test_validate_without_arguments_is_a_usage_error(run_cli: RunCli):
    result = run_cli("validate")
    assert result.returncode == ExitCode.USAGE
    assert "Traceback" not in result.stderr


def test_help_validate_and_spec_errors_import_nothing_heavy(tmp_path: Path):
    configs = [str(p) for p in CONFIGS]
    bad = tmp_path / "bad.yaml"
    bad.write_text("gradscope: 1\nlosses: {l: nowhere}\n", encoding="utf-8")
    spec_errors = [[command, str(bad)] for command in ("inspect", "check", "diff", "graph")]
    script = f"""
import sys
from gradscope._src.cli import main
for args in (["--help"], ["validate", *{configs!r}], *{spec_errors!r}):
    try:
        main(args, standalone_mode=False)
    except SystemExit:
        pass
heavy = {{"tensorflow", "keras", "numpy", "jax", "torch", "h5py", "scipy"}}
print(sorted(heavy & {{name.split(".")[0] for name in sys.modules}}))
"""
    result = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=True
    )
    assert result.stdout.strip().splitlines()[-1] == "[]"


def test_version_option():
    result = CliRunner().invoke(cli.main, ["--version"])
    assert result.exit_code == 0
    assert __version__ in result.output


def test_short_help_option():
    result = CliRunner().invoke(cli.main, ["-h"])
    assert result.exit_code == 0
    assert "validate" in result.output and "schema" in result.output


def test_schema_command_prints_the_checked_in_schema():
    result = CliRunner().invoke(cli.main, ["schema"])
    assert result.exit_code == 0
    assert json.loads(result.output) == spec_schema()
    checked_in = (ROOT / "schema" / "spec-v1.json").read_text(encoding="utf-8")
    assert checked_in == result.output, "regenerate with: gradscope schema > schema/spec-v1.json"


def test_internal_error_exits_3_in_one_line(monkeypatch: pytest.MonkeyPatch):
    def broken(path: str, *, max_elements: int) -> None:
        raise RuntimeError("boom")

    monkeypatch.setattr("gradscope._src.frontends.yaml.load_spec", broken)
    result = CliRunner().invoke(cli.main, ["validate", "x.yaml"])
    assert result.exit_code == ExitCode.INTERNAL
    first, second = result.output.strip().splitlines()
    assert first == "gradscope validate: internal error: RuntimeError: boom"
    assert "bug in gradscope" in second and "--traceback" in second
    assert "Traceback (most recent call last)" not in result.output
    shown = CliRunner().invoke(cli.main, ["--traceback", "validate", "x.yaml"])
    assert "Traceback (most recent call last)" in shown.output


def test_interrupt_exits_130(monkeypatch: pytest.MonkeyPatch):
    def interrupted(path: str, *, max_elements: int) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr("gradscope._src.frontends.yaml.load_spec", interrupted)
    result = CliRunner().invoke(cli.main, ["validate", "x.yaml"])
    assert result.exit_code == ExitCode.INTERRUPTED


@pytest.mark.parametrize("command", ["inspect", "diff", "check", "graph", "validate"])
def test_every_command_help_lists_its_exit_codes(command: str) -> None:
    result = CliRunner().invoke(cli.main, [command, "--help"])
    assert result.exit_code == 0
    codes = result.output.split("Exit codes:", 1)[1]
    assert "  0 " in codes and "  2 " in codes


def test_help_lists_every_command_without_importing_one():
    script = """
import sys
from gradscope._src.cli import main
try:
    main(["--help"])
except SystemExit:
    pass
print(sorted(m for m in sys.modules if m.startswith("gradscope._src.cli.")))
"""
    result = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=True
    )
    listed = result.stdout.split("Commands:", 1)[1]
    for name, entry in COMMANDS.items():
        assert f"  {name}" in listed and entry.summary in listed  # whole, not cut with "..."
    loaded = result.stdout.strip().splitlines()[-1]
    assert not any(f"'{entry.module}'" in loaded for entry in COMMANDS.values()), loaded


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_each_listed_command_is_its_module_s_and_says_the_same(name: str):
    command = cli.main.get_command(click.Context(cli.main), name)
    assert command is not None and command.name == name
    assert command.get_short_help_str(limit=200) == COMMANDS[name].summary
    assert len(f"  {max(COMMANDS, key=len)}  {COMMANDS[name].summary}") <= 80
    result = CliRunner().invoke(cli.main, [name, "--help"])
    assert result.exit_code == 0 and f"Usage: main {name}" in result.output


def test_an_unknown_command_is_a_usage_error():
    result = CliRunner().invoke(cli.main, ["inspekt"])
    assert result.exit_code == 2
    assert "No such command 'inspekt'. Did you mean 'inspect'?" in result.output
    unlike = CliRunner().invoke(cli.main, ["zzz"])
    assert unlike.exit_code == 2 and "No such command 'zzz'." in unlike.output
    assert "Did you mean" not in unlike.output
