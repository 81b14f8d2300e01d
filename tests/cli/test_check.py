"""``gradscope check`` as CI runs it: exit codes, formats, baselines, several specs, errors."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from click.testing import CliRunner

from gradscope._src.cli import main
from tests.analysis.test_check import HEAD
from tests.conftest import CONFIGS, ROOT, RunCli

CONFIG_PATHS = [str(p.relative_to(ROOT)) for p in CONFIGS]


def _invoke(*args: str) -> tuple[int, str, str]:
    """The command in this process (TensorFlow is imported once for all these tests)."""
    result = CliRunner().invoke(main, list(args), catch_exceptions=False)
    return result.exit_code, result.stdout, result.stderr


@pytest.fixture
def detached(write_spec) -> str:
    """A two-head model whose first head is behind a stop_gradient, against its expect."""
    return write_spec(HEAD, "detached.yaml")


def _schema_registry():
    referencing = pytest.importorskip("referencing")
    resources = []
    for name in ("report-v1.json", "check-v1.json"):
        schema = json.loads((ROOT / "schema" / name).read_text())
        resources.append((schema["$id"], referencing.Resource.from_contents(schema)))
    return referencing.Registry().with_resources(resources)


def _validate(data: dict, name: str) -> None:
    jsonschema = pytest.importorskip("jsonschema")
    schema = json.loads((ROOT / "schema" / name).read_text())
    jsonschema.Draft202012Validator(schema, registry=_schema_registry()).validate(data)


# --- as a user runs it (subprocess) -----------------------------------------------------------


def test_check_help_shows_exit_codes_without_tensorflow(run_cli: RunCli, no_tensorflow) -> None:
    result = run_cli("check", "--help", env=no_tensorflow)
    assert result.returncode == 0, result.stderr
    for line in ("0    passed", "1    unexpected gradients", "2    a bad spec"):
        assert line in result.stdout
    for fmt in ("table", "json", "junit", "sarif", "github", "markdown"):
        assert fmt in result.stdout
    assert "--baseline" in result.stdout and "--write-baseline" in result.stdout


#: The shipped spec whose check fails on purpose (the README's check example).
FAILING_CONFIG = "configs/two-heads.yaml"


@pytest.mark.tf
def test_check_shipped_configs_pass_but_the_broken_example(run_cli: RunCli) -> None:
    from gradscope._src.frontends.yaml import load_specs

    passing = [p for p in CONFIG_PATHS if p != FAILING_CONFIG]
    pairs = sum(len(s.losses) * len(s.variables) for s in load_specs(passing))
    result = run_cli("check", *passing)
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout.rstrip().endswith(
        f"passed: {len(passing)} specs, {pairs} pairs, no unexpected gradients (exit code 0)"
    )
    assert result.stderr == ""


@pytest.mark.tf
def test_check_two_heads_fails_on_loss_1s_stop_gradient(run_cli: RunCli) -> None:
    """The README's example: loss_1 reaches neither body/w nor task1/w, cut at t1_frozen."""
    result = run_cli("check", *CONFIG_PATHS)
    assert result.returncode == 1, result.stderr
    text = " ".join(result.stdout.split())
    for variable in ("body/w", "task1/w"):
        assert (
            f"`{variable}` gets no gradient from `loss_1`: every path is cut at `t1_frozen` "
            f"(StopGradient), {FAILING_CONFIG}:18"
        ) in text
    assert text.endswith(f"failed: 2 problems in 1 of {len(CONFIG_PATHS)} specs (exit code 1)")


@pytest.mark.tf
def test_check_detached_head_fails_with_a_readable_report(run_cli: RunCli, detached) -> None:
    folder, name = Path(detached).parent, Path(detached).name
    result = run_cli("check", name, cwd=folder)  # as in a repository: a relative path
    assert result.returncode == 1, result.stderr
    text = " ".join(result.stdout.split())  # the table wraps long messages
    assert (
        "`task1/w` gets no gradient from `loss_1`: every path is cut at `t1_frozen` "
        f"(StopGradient), {name}:11, but expect.loss_1.connected lists `task1/*`"
    ) in text
    assert f"unexpected-none {name}:20 " in text  # where the contradicted expectation is
    assert "never-trained" not in text  # one variable, one problem (issue 29)
    assert "t1_frozen (StopGradient) at detached.yaml:11" in text  # the cut-point table
    assert "failed: 1 problem in 1 spec (exit code 1)" in text
    assert "Traceback" not in result.stderr


@pytest.mark.tf
def test_check_bad_specs_exit_2_with_every_error_in_the_report_ci_reads(
    run_cli: RunCli, write_spec, tmp_path: Path
) -> None:
    a = write_spec(HEAD.replace("inputs: [x, body/w]", "inputs: [x, nope]"), "a.yaml")
    b = write_spec(HEAD.replace("losses:", "losses:\n  extra: missing_node"), "b.yaml")
    out = tmp_path / "report.xml"
    out.write_text("previous")
    result = run_cli("check", a, "configs/multitask.yaml", b, "--format", "junit",
                     "--output", str(out))  # fmt: skip
    assert result.returncode == 2
    assert result.stdout == ""
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 2, result.stderr
    assert lines[0].startswith(f"{a}:9:") and "nope" in lines[0]
    assert lines[1].startswith(f"{b}:16:10: losses.extra:") and "missing_node" in lines[1]
    # the test tab says why instead of a missing file: an <error> per spec error, at its line
    root = ET.fromstring(out.read_bytes())
    errors = root.findall("testsuite/testcase/error")
    assert [e.get("type") for e in errors] == ["spec-error", "spec-error"]
    assert (errors[0].text or "").startswith(f"at: {a}:9:")
    assert (errors[1].text or "").startswith(f"at: {b}:16:10\nlosses.extra:")


@pytest.mark.tf
def test_check_output_file_still_tells_the_log_why_it_failed(
    run_cli: RunCli, tmp_path: Path
) -> None:
    out = tmp_path / "gradscope.sarif"
    result = run_cli("check", "configs/two-heads.yaml", "--format", "sarif", "-o", str(out))
    assert result.returncode == 1 and result.stdout == ""
    log = " ".join(result.stderr.split())
    assert "unexpected-none configs/two-heads.yaml:30 `body/w` gets no gradient" in log
    assert log.endswith("failed: 2 problems in 1 spec (exit code 1)")
    assert json.loads(out.read_text())["runs"][0]["results"]


@pytest.mark.tf
def test_check_bad_spec_still_writes_the_sarif_upload_step_needs(
    run_cli: RunCli, write_spec, tmp_path: Path
) -> None:
    bad = write_spec(HEAD.replace("inputs: [x, body/w]", "inputs: [x, nope]"), "bad.yaml")
    out = tmp_path / "gradscope.sarif"
    result = run_cli(
        "check", bad, "--format", "sarif", "-o", str(out), "--source-root", str(tmp_path)
    )
    assert result.returncode == 2 and result.stderr.startswith(f"{bad}:9:")
    run = json.loads(out.read_text())["runs"][0]
    assert run["invocations"][0]["executionSuccessful"] is False
    place = run["results"][0]["locations"][0]["physicalLocation"]
    assert place["artifactLocation"]["uri"] == "bad.yaml" and place["region"]["startLine"] == 9


def test_check_unreadable_baseline_exits_2_before_tensorflow(
    run_cli: RunCli, no_tensorflow, tmp_path: Path
) -> None:
    bad = tmp_path / "baseline.json"
    bad.write_text("{oops")
    result = run_cli("check", "configs/multitask.yaml", "--baseline", str(bad), env=no_tensorflow)
    assert result.returncode == 2
    assert (
        result.stderr.strip()
        == f"{bad}:1:2: not JSON: Expecting property name enclosed in double quotes"
    )


def test_check_needs_a_spec(run_cli: RunCli, no_tensorflow) -> None:
    result = run_cli("check", env=no_tensorflow)
    assert result.returncode == 2
    assert "Missing argument 'SPEC...'" in result.stderr


# --- formats and baselines (in process) -------------------------------------------------------


@pytest.mark.tf
def test_check_json_one_spec_is_the_report_shape(detached) -> None:
    code, out, _ = _invoke("check", detached, "--format", "json")
    assert code == 1
    data = json.loads(out)
    _validate(data, "report-v1.json")
    assert data["spec"] == detached and data["check"]["exit_code"] == 1
    kinds = {(p["loss"], p["variable"], p["kind"]) for p in data["problems"]}
    # task1/w trains through no loss, but one variable is one problem: the contradicted expect
    assert kinds == {("loss_1", "task1/w", "unexpected-none")}


@pytest.mark.tf
def test_check_json_several_specs_is_the_combined_shape(detached) -> None:
    code, out, _ = _invoke("check", "configs/multitask.yaml", detached, "--format", "json")
    assert code == 1
    data = json.loads(out)
    _validate(data, "check-v1.json")
    for report in data["reports"]:
        _validate(report, "report-v1.json")
    assert data["specs"] == ["configs/multitask.yaml", detached]
    assert {p["spec"] for p in data["problems"]} == {detached}


@pytest.mark.tf
def test_check_baseline_known_passes_new_fails(detached, tmp_path: Path) -> None:
    baseline = tmp_path / "baseline.json"
    code, out, _ = _invoke("check", detached, "--write-baseline", str(baseline))
    assert code == 1  # writing a baseline does not change the verdict
    assert "failed: 1 problem" in out
    assert json.loads(baseline.read_text())["check"]["problems"] == 1

    code, out, _ = _invoke("check", detached, "--baseline", str(baseline))
    assert code == 0, out
    assert "passed: 1 spec, 6 pairs, no unexpected gradients, 1 known" in out
    assert "known  unexpected-none" in out  # known problems stay visible

    Path(detached).write_text(HEAD.replace("  task2/w:", "  spare: {shape: [3]}\n  task2/w:"))
    code, out, _ = _invoke("check", detached, "--baseline", str(baseline), "--format", "json")
    assert code == 1
    data = json.loads(out)
    assert [(p["variable"], p["kind"]) for p in data["problems"]] == [("spare", "never-trained")]
    assert len(data["known_problems"]) == 1


@pytest.mark.tf
def test_check_junit_sarif_github_through_the_cli(detached, tmp_path: Path) -> None:
    junit = tmp_path / "junit.xml"
    code, out, _ = _invoke("check", detached, "--format", "junit", "--output", str(junit))
    assert code == 1 and out == ""
    root = ET.parse(junit).getroot()
    assert len(root.findall(".//failure")) == 1

    code, out, _ = _invoke("check", detached, "--format", "sarif")
    results = json.loads(out)["runs"][0]["results"]
    region = {r["ruleId"]: r["locations"][0]["physicalLocation"]["region"] for r in results}
    assert region == {"unexpected-none": {"startLine": 20}}

    code, out, _ = _invoke("check", detached, "--format", "github")
    errors = [line for line in out.splitlines() if line.startswith("::error ")]
    assert len(errors) == 1
    file = detached.replace(":", "%3A").replace(",", "%2C")
    assert all(f"file={file},line=" in line for line in errors)


def test_check_help_exit_codes_are_the_documented_ones() -> None:
    """check's help lists exit codes of gradscope.ExitCode, the table the docs' exit-code
    page is generated from (scripts/docs_hooks.py)."""
    from gradscope._src.cli.check import EPILOG
    from gradscope._src.errors import ExitCode

    help_rows = [line.split(None, 1) for line in EPILOG.splitlines() if line[:3].strip().isdigit()]
    codes = sorted(int(code) for code, _ in help_rows)
    assert codes == [0, 1, 2, 3, 5, 130]
    assert set(codes) <= {int(code) for code in ExitCode}


def test_check_pre_commit_hooks_run_check_and_validate() -> None:
    import yaml

    hooks = {h["id"]: h for h in yaml.safe_load((ROOT / ".pre-commit-hooks.yaml").read_text())}
    assert hooks["gradscope-check"]["entry"] == "gradscope check"
    assert hooks["gradscope-validate"]["entry"] == "gradscope validate"
    for hook in hooks.values():
        assert hook["language"] == "python" and hook["require_serial"] is True
        assert hook["types"] == ["yaml"]


@pytest.mark.parametrize(
    "path,taken",
    [
        ("models/two-heads.gradscope.yaml", True),
        ("two-heads.gradscope.yml", True),
        ("configs/hydra/train.yaml", False),  # someone else's YAML in a configs/ folder
        ("configs/multitask.yaml", False),
        (".github/workflows/ci.yml", False),
    ],
)
def test_pre_commit_hooks_take_only_files_named_as_specs(path: str, taken: bool) -> None:
    """pre-commit matches `files` with re.search against the repository-relative path."""
    import re

    import yaml

    for hook in yaml.safe_load((ROOT / ".pre-commit-hooks.yaml").read_text()):
        assert bool(re.search(hook["files"], path)) is taken, (hook["id"], path)


def test_an_integer_variable_is_never_trained_and_says_why() -> None:
    """TensorFlow gives no gradient to an int32 variable; the problem names its type."""
    import tensorflow as tf

    picks = tf.Variable([0, 2, 1])
    with tf.GradientTape() as tape:
        loss = tf.reduce_sum(tf.cast(picks, tf.float32))
    assert tape.gradient(loss, picks) is None  # bare TensorFlow's answer
    spec = "tests/cases/integer-variable.yaml"
    code, out, _ = _invoke("check", spec, "--format", "json")
    assert code == 1
    (problem,) = json.loads(out)["problems"]
    assert (problem["variable"], problem["kind"]) == ("picks", "never-trained")
    assert "it holds int32 values" in problem["message"]
    assert "trainable: false" in problem["message"]
    assert problem["source"] == f"{spec}:5"


def test_github_format_annotates_spec_errors_too(write_spec) -> None:
    """A bad spec still exits 2 with its FILE:LINE:COLUMN line on stderr; with --format
    github the same error is also an ::error annotation on that line."""
    bad = write_spec(
        "gradscope: 1\nvariables:\n  w: {shape: [2]}\n"
        "nodes:\n  - {name: l, op: reduce_sum, inputs: [nope]}\nlosses: {l: l}\n",
        "bad.yaml",
    )
    result = CliRunner().invoke(main, ["check", bad, "--format", "github"])
    assert result.exit_code == 2
    (line,) = result.stdout.splitlines()
    assert line.startswith(f"::error file={bad.replace(':', '%3A')},line=5,col=40,")
    assert "saw 'nope'" in line
    assert result.stderr.startswith(f"{bad}:5:40: ")
