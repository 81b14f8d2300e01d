"""``gradscope mcp`` as an agent uses it: the mcp SDK's own client over stdio, one server
process for the module, bounded in time and stopped on every exit path (the client's context
ends it; the fixture's ``fail_after`` bounds every call)."""

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
print("program says", float(loss))
"""
#: Every call of the module, server start included, ends within this (seconds).
BOUND = 240


def _schema(name: str) -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads((ROOT / "schema" / f"{name}-v1.json").read_text("utf-8"))
    return loaded


async def _session(root: Path, home: Path, calls: list[tuple[str, dict[str, Any]]]) -> list[Any]:
    """Start the server in ``root``, make ``calls`` in order with the SDK's client; the
    server process ends when the client's context closes, whatever happened."""
    import anyio
    from mcp.client.session import ClientSession
    from mcp.client.stdio import StdioServerParameters, stdio_client

    env = {**os.environ, "PYTHONPATH": str(ROOT), "HOME": str(home)}
    args = ["-m", "gradscope", "mcp", "--root", str(root)]
    params = StdioServerParameters(command=sys.executable, args=args, env=env)
    out: list[Any] = []
    with anyio.fail_after(BOUND):
        async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            out.append(await session.list_tools())
            for name, arguments in calls:
                out.append(await session.call_tool(name, arguments))
    return out


@pytest.fixture(scope="module")
def answers(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    import anyio

    root = tmp_path_factory.mktemp("root")
    (root / "train.py").write_text(PROGRAM, encoding="utf-8")
    outside = tmp_path_factory.mktemp("outside")
    (outside / "secret.py").write_text("x = 1\n", encoding="utf-8")
    (root / "link.py").symlink_to(outside / "secret.py")
    calls = {
        "explain": ("explain", {"cause": "stop-gradient"}),
        "unknown": ("explain", {"cause": "nope"}),
        "escape": ("inspect", {"target": "../outside/secret.py:build"}),
        "link": ("run", {"script": "link.py"}),
        "module": ("check", {"specs": ["os.path:join"]}),
        "run": ("run", {"script": "train.py"}),
    }
    home = tmp_path_factory.mktemp("home")  # Keras' own ~/.keras
    results = anyio.run(_session, root, home, list(calls.values()))
    return {"tools": results[0], **dict(zip(calls, results[1:], strict=True)), "root": root}


def test_mcp_lists_the_five_tools(answers: dict[str, Any]) -> None:
    names = sorted(t.name for t in answers["tools"].tools)
    assert names == ["check", "explain", "inspect", "prove_fix", "run"]


def test_mcp_explains_a_cause_from_the_registry(answers: dict[str, Any]) -> None:
    from gradscope._src.results.causes import CAUSES

    got = answers["explain"].structured_content
    assert got["id"] == "stop-gradient" and got["help"] == CAUSES["stop-gradient"].help
    assert "stop-gradient" in answers["unknown"].structured_content["causes"]


@pytest.mark.parametrize("call", ["escape", "link", "module"])
def test_mcp_refuses_what_lies_outside_the_working_folder(answers: dict, call: str) -> None:
    result = answers[call]
    assert result.is_error
    jsonschema.validate(result.structured_content, _schema("error"))
    assert result.structured_content["error"]["kind"] == "usage"


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
    assert f"program says {float(loss)}" in said["stdout"]  # the program's own output
    (call,) = report["calls"]
    source = call["sources"]["w"]
    assert source["status"] == "none:stopped" and call["target"]["value"] == float(loss)
    assert source["fix"]["edit"]["new"] == "    loss = tf.reduce_sum(tf.matmul(x, w))"
    assert sorted(os.listdir(answers["root"])) == ["link.py", "train.py"], "nothing left over"
