"""``gradscope mcp`` as an agent uses it: the mcp SDK's own client over stdio, one server
process for the module, bounded in time and stopped on every exit path (the client's context
ends it; the fixture's ``fail_after`` bounds every call).

The client validates every result that is not an error against the tool's ``outputSchema``
(``ClientSession.call_tool``); the tests check that those schemas are the published ones, and
validate each result again with plain ``jsonschema``."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import ROOT

pytest.importorskip("mcp")
jsonschema = pytest.importorskip("jsonschema")

PROGRAM = """import tensorflow as tf

w = tf.Variable([[1.0], [2.0]], name="w")
x = tf.constant([[1.0, 2.0]])
with tf.GradientTape() as tape:
    loss = tf.reduce_sum(tf.stop_gradient(tf.matmul(x, w)))
grads = tape.gradient(loss, [w])
print("x" * 100_000)  # more than the result keeps of a program's output
print("program says", float(loss))
"""
#: Writes its process id beside the working folder's files, then outlives any time limit.
SLEEPER = """import os, time

with open(os.path.join(os.getcwd(), "..", "..", "sleeper.pid"), "w") as f:
    f.write(str(os.getpid()))
time.sleep(120)
"""
#: A spec: loss `main` reads `w` through a stop_gradient.
SPEC = """gradscope: 1
inputs:
  x: {values: [[1.0, 2.0]]}
variables:
  w: {values: [[1.0], [2.0]]}
nodes:
  - {name: h, op: matmul, inputs: [x, w]}
  - {name: cut, op: stop_gradient, inputs: [h]}
  - {name: total, op: reduce_sum, inputs: [cut]}
losses:
  main: total
"""
#: Every call of the module, server start included, ends within this (seconds).
BOUND = 300
#: The tools and the schema of each one's result (``gradscope schema NAME``).
RESULTS = {"inspect": "report", "run": "run", "check": "check", "prove_fix": "fix"}


def _schema(name: str) -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads((ROOT / "schema" / f"{name}-v1.json").read_text("utf-8"))
    return loaded


#: What ``import tensorflow`` itself writes in the home folder (Keras' config, matplotlib's
#: font cache: TensorFlow imports both), as ``python train.py`` would; it also probes the temp
#: folder with a file it removes at once (``tempfile.gettempdir``).
TENSORFLOW_OWN = (".keras", ".cache/matplotlib", ".config/matplotlib")
#: The folders those are made in.
MADE_FOR_THEM = (".cache", ".config")


def _tree(*folders: Path) -> dict[str, tuple[int, int]]:
    """Every file and folder under ``folders`` (what TensorFlow's import writes left out): a
    file's size and modification time; a folder's existence."""
    out = {}
    for folder in folders:
        for path in folder.rglob("*"):
            name = str(path.relative_to(folder))
            if name in MADE_FOR_THEM or any(name == own or name.startswith(f"{own}/")
                                            for own in TENSORFLOW_OWN):  # fmt: skip
                continue
            st = path.lstat()
            out[str(path)] = (0, 0) if path.is_dir() else (st.st_size, st.st_mtime_ns)
    return out


async def _session(root: Path, env: dict[str, str],
                   calls: list[tuple[str, dict[str, Any]]]) -> list[Any]:  # fmt: skip
    """Start the server in ``root``, make ``calls`` in order with the SDK's client; the
    server process ends when the client's context closes, whatever happened."""
    import anyio
    from mcp.client.session import ClientSession
    from mcp.client.stdio import StdioServerParameters, stdio_client

    args = ["-m", "gradscope", "mcp", "--root", str(root)]
    params = StdioServerParameters(command=sys.executable, args=args, env=env)
    out: list[Any] = []
    with anyio.fail_after(BOUND):
        async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
            out.append(await session.initialize())
            out.append(await session.list_tools())
            for name, arguments in calls:
                out.append(await session.call_tool(name, arguments))
    return out


@pytest.fixture(scope="module")
def answers(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    import anyio

    root = tmp_path_factory.mktemp("root")
    (root / "train.py").write_text(PROGRAM, encoding="utf-8")
    (root / "sleeper.py").write_text(SLEEPER, encoding="utf-8")
    (root / "m.yaml").write_text(SPEC, encoding="utf-8")
    outside = tmp_path_factory.mktemp("outside")
    (outside / "secret.py").write_text("x = 1\n", encoding="utf-8")
    (root / "link.py").symlink_to(outside / "secret.py")
    calls = {
        "explain": ("explain", {"cause": "stop-gradient"}),
        "unknown": ("explain", {"cause": "nope"}),
        "escape": ("inspect", {"target": "../outside/secret.py:build"}),
        "link": ("run", {"script": "link.py"}),
        "module": ("check", {"specs": ["os.path:join"]}),
        "wrong": ("run", {"script": 3, "steps": 0}),
        "extra": ("explain", {"cause": "stop-gradient", "why": "x"}),
        "missing": ("run", {"script": "no_such.py"}),
        "run": ("run", {"script": "train.py"}),
        "inspect": ("inspect", {"target": "m.yaml"}),
        "check": ("check", {"specs": ["m.yaml"]}),
        "prove": ("prove_fix", {"script": "train.py"}),
        "killed": ("prove_fix", {"script": "sleeper.py", "timeout": 8}),
    }
    home = tmp_path_factory.mktemp("home")  # Keras' own ~/.keras
    temp = tmp_path_factory.mktemp("temp")  # the server's and its children's temp folder
    env = {**os.environ, "PYTHONPATH": str(ROOT), "HOME": str(home), "TMPDIR": str(temp)}
    watched = [outside, home, temp]
    before = _tree(*watched)
    results = anyio.run(_session, root, env, list(calls.values()))
    return {"init": results[0], "tools": results[1],
            **dict(zip(calls, results[2:], strict=True)), "root": root,
            "outside": (before, _tree(*watched))}  # fmt: skip


def test_mcp_lists_each_tools_published_schemas(answers: dict[str, Any]) -> None:
    import gradscope

    info = answers["init"].server_info
    assert (info.name, info.version) == ("gradscope", gradscope.__version__)
    tools = {t.name: t for t in answers["tools"].tools}
    assert sorted(tools) == ["check", "explain", "inspect", "prove_fix", "run"]
    arguments = _schema("mcp")["$defs"]
    for name, tool in tools.items():
        assert tool.input_schema == arguments[name], name
        jsonschema.Draft202012Validator.check_schema(tool.output_schema)
        if name in RESULTS:
            assert tool.output_schema == _schema(RESULTS[name]), name
    explained = {k: v for k, v in tools["explain"].output_schema.items() if k != "$schema"}
    assert explained == arguments["explanation"]


def test_mcp_explains_a_cause_from_the_registry(answers: dict[str, Any]) -> None:
    from gradscope._src.results.causes import CAUSES

    got = answers["explain"].structured_content
    assert got["id"] == "stop-gradient" and got["help"] == CAUSES["stop-gradient"].help
    jsonschema.validate(got, {**_schema("mcp")["$defs"]["explanation"]})
    unknown = answers["unknown"]
    assert unknown.is_error and "stop-gradient" in unknown.structured_content["causes"]
    jsonschema.validate(unknown.structured_content, _schema("error"))


@pytest.mark.parametrize("call", ["escape", "link", "module", "wrong", "extra"])
def test_mcp_refuses_bad_arguments_as_data(answers: dict, call: str) -> None:
    """A path outside the working folder, arguments its schema refuses (a number for a path,
    steps 0, an argument no tool takes): a usage failure, exit code 2, as error-v1.json."""
    result = answers[call]
    assert result.is_error
    jsonschema.validate(result.structured_content, _schema("error"))
    error = result.structured_content["error"]
    assert error["kind"] == "usage" and error["exit_code"] == 2


@pytest.mark.tf
def test_mcp_runs_a_program_as_gradscope_run_does(answers: dict[str, Any]) -> None:
    import tensorflow as tf

    # bare TensorFlow: the same loss, and its gradient for w is None
    w = tf.Variable([[1.0], [2.0]])
    with tf.GradientTape() as tape:
        loss = tf.reduce_sum(tf.stop_gradient(tf.matmul(tf.constant([[1.0, 2.0]]), w)))
    assert tape.gradient(loss, w) is None
    result = answers["run"]
    report = result.structured_content
    jsonschema.validate(report, _schema("run"))
    said = json.loads(result.content[1].text)
    assert said["exit_code"] == 1  # a None gradient: a problem, as gradscope run says
    assert f"program says {float(loss)}" in said["stdout"]  # the program's own output, its end
    assert len(said["stdout"].encode()) <= 64 * 1024
    (call,) = report["calls"]
    source = call["sources"]["w"]
    assert source["status"] == "none:stopped" and call["target"]["value"] == float(loss)
    assert source["fix"]["edit"]["new"] == "    loss = tf.reduce_sum(tf.matmul(x, w))"


@pytest.mark.tf
def test_mcp_inspects_and_checks_a_spec(answers: dict[str, Any]) -> None:
    """The client validated both results against the tools' output schemas; so does plain
    jsonschema, and the statuses are bare TensorFlow's."""
    import tensorflow as tf

    w = tf.Variable([[1.0], [2.0]])
    with tf.GradientTape() as tape:
        loss = tf.reduce_sum(tf.stop_gradient(tf.matmul(tf.constant([[1.0, 2.0]]), w)))
    assert tape.gradient(loss, w) is None
    report = answers["inspect"].structured_content
    jsonschema.validate(report, _schema("report"))
    pair = report["losses"]["main"]["variables"]["w"]
    assert pair["status"] == "none:stopped" and report["losses"]["main"]["value"] == float(loss)
    assert pair["fix"]["edit"]["new"] == "  - {name: cut, op: identity, inputs: [h]}"
    checked = answers["check"]
    jsonschema.validate(checked.structured_content, _schema("check"))
    assert not checked.is_error and json.loads(checked.content[1].text)["exit_code"] == 1


@pytest.mark.tf
def test_mcp_proves_a_fix_inside_the_working_folder(answers: dict[str, Any]) -> None:
    import tensorflow as tf

    result = answers["prove"]
    assert not result.is_error, result.structured_content
    proof = result.structured_content
    jsonschema.validate(proof, _schema("fix"))
    (edit,) = proof["edits"]
    assert edit["new"] == "    loss = tf.reduce_sum(tf.matmul(x, w))"
    # bare TensorFlow on the edited line: a gradient where there was None, the same loss
    w = tf.Variable([[1.0], [2.0]])
    x = tf.constant([[1.0, 2.0]])
    with tf.GradientTape() as tape:
        loss = tf.reduce_sum(tf.matmul(x, w))
    assert tape.gradient(loss, w) is not None
    assert proof["variables"] == [{"site": "train.py:7", "variable": "w",
                                   "before": "none:stopped", "after": "ok"}]  # fmt: skip
    (forward,) = proof["forward"]
    assert forward["before"] == forward["after"] == float(loss) and proof["passed"]
    assert not proof["applied"] and (answers["root"] / "train.py").read_text() == PROGRAM


def test_mcp_says_a_programs_failure_as_gradscope_run_does(answers: dict[str, Any]) -> None:
    """A script that is not there: gradscope run's own failure (its JSON, on its standard
    error), exit code 2, as the tool's error result."""
    result = answers["missing"]
    assert result.is_error
    jsonschema.validate(result.structured_content, _schema("error"))
    error = result.structured_content["error"]
    assert error["exit_code"] == 2 and "no_such.py" in error["message"]
    assert result.structured_content["command"] == "run"


def test_mcp_kills_a_proof_past_its_time_and_leaves_nothing(answers: dict[str, Any]) -> None:
    """A proof killed at its time limit: the failure as data, no scratch copy left in the
    working folder, no process left running (the program the proof started included)."""
    result = answers["killed"]
    assert result.is_error and "still running" in result.structured_content["error"]["message"]
    assert result.structured_content["error"]["kind"] == "timeout"
    jsonschema.validate(result.structured_content, _schema("error"))
    root: Path = answers["root"]
    left = sorted(os.listdir(root))
    assert left in (["link.py", "m.yaml", "sleeper.pid", "sleeper.py", "train.py"],
                    ["link.py", "m.yaml", "sleeper.py", "train.py"]), left  # fmt: skip
    if "sleeper.pid" in left:  # the program had started: it is gone too
        pid = int((root / "sleeper.pid").read_text())
        status = Path(f"/proc/{pid}/status")
        assert not status.exists() or "\nState:\tZ" in status.read_text(), "still running"
    for proc in Path("/proc").iterdir():  # nothing runs in the working folder any more
        try:
            cwd = os.readlink(proc / "cwd")
        except OSError:
            continue
        assert not cwd.startswith(str(root)), f"process {proc.name} still runs in {cwd}"


def test_mcp_writes_nothing_outside_the_working_folder(answers: dict[str, Any]) -> None:
    """After every call (programs run, a fix proved, a proof killed): the folders beside it,
    the home folder and the temp folder (TMPDIR) hold what they held (less what TensorFlow's
    own import writes)."""
    before, after = answers["outside"]
    assert after == before
