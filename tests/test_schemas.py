"""The JSON schemas in ``schema/`` stand alone: plain ``jsonschema.validate`` checks a real report
against one file, with no registry and no network.

Each schema refers only inside itself (``#/$defs/...``). ``run-v1.json`` and ``check-v1.json``
hold copies of the definitions they share with ``report-v1.json``, made by
``scripts/bundle_schemas.py``; the one place to change a shared definition stays
``report-v1.json``.
"""

from __future__ import annotations

import json
import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import ROOT, run_in_process

SCHEMAS = ROOT / "schema"
PROGRAMS = ROOT / "tests" / "frontends" / "program" / "programs"


def _load(name: str) -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads((SCHEMAS / name).read_text(encoding="utf-8"))
    return loaded


def _refs(node: object) -> Iterator[str]:
    if isinstance(node, dict):
        for key, value in node.items():
            if key == "$ref":
                yield value
            else:
                yield from _refs(value)
    elif isinstance(node, list):
        for item in node:
            yield from _refs(item)


@pytest.mark.parametrize("name", sorted(p.name for p in SCHEMAS.glob("*.json")))
def test_schema_refers_only_inside_itself(name: str) -> None:
    schema = _load(name)
    outside = [ref for ref in _refs(schema) if not ref.startswith("#/")]
    assert outside == [], f"{name} refers outside itself: {outside}"
    assert "://" not in str(schema.get("$id", "")), f"{name}: $id {schema['$id']} is a URL"
    for ref in _refs(schema):  # every pointer leads somewhere
        node: Any = schema
        for part in ref[2:].split("/"):
            assert part in node, f"{name}: {ref} leads nowhere"
            node = node[part]


def test_schemas_are_bundled() -> None:
    """run-v1.json and check-v1.json are as scripts/bundle_schemas.py makes them."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("bundle", ROOT / "scripts" / "bundle_schemas.py")
    assert spec and spec.loader
    bundle = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bundle)
    assert bundle.main(["--check"]) == 0, "run: python scripts/bundle_schemas.py"


def test_schema_copies_equal_the_report_schema() -> None:
    report = _load("report-v1.json")
    run = _load("run-v1.json")
    own = {"call", "problem", "source", "via"}  # run-v1's own definitions; the rest copies
    shared = [name for name in run["$defs"] if name not in own]
    assert {"cut_point", "fix", "replica", "shape", "status"} <= set(shared)
    for name in shared:
        assert run["$defs"][name] == report["$defs"][name], f"copy $defs.{name} to run-v1.json"
    check = _load("check-v1.json")
    body = {k: v for k, v in report.items() if k not in ("$schema", "$id", "$defs")}
    assert check["$defs"]["report"] == body, "copy report-v1.json's body to check-v1.json"
    for name, definition in report["$defs"].items():
        assert check["$defs"][name] == definition, f"copy $defs.{name} to check-v1.json"


def _refuse_network(monkeypatch: pytest.MonkeyPatch) -> None:
    """Any attempt to open a connection fails the test."""

    def refuse(*args: object, **kwargs: object) -> None:
        raise AssertionError(f"a schema tried to reach the network: {args}")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket, "create_connection", refuse)


def _json(
    *args: str, cwd: Path = ROOT, code: int = 0, output: Path | None = None
) -> dict[str, Any]:
    result = run_in_process(*args, cwd=cwd)
    assert result.returncode == code, result.stderr
    data: dict[str, Any] = json.loads(output.read_text() if output else result.stdout)
    return data


@pytest.mark.tf
def test_real_reports_validate_with_plain_jsonschema_offline(tmp_path: Path) -> None:
    jsonschema = pytest.importorskip("jsonschema")
    ran = tmp_path / "run.json"  # the program prints to standard output too
    reports = {
        "report-v1.json": _json("inspect", "configs/multitask.yaml", "--format", "json"),
        "check-v1.json": _json(
            "check", "configs/two-heads.yaml", "configs/multitask.yaml", "--format", "json", code=1
        ),
        "diff-v1.json": _json(
            "diff", "configs/multitask.yaml", "loss_1", "loss_2", "--format", "json"
        ),
        "run-v1.json": _json(
            "run",
            "--format",
            "json",
            "--output",
            str(ran),
            "dcgan.py",
            cwd=PROGRAMS,
            code=1,
            output=ran,
        ),
    }
    assert reports["run-v1.json"]["calls"] and reports["check-v1.json"]["problems"]
    # check of one spec prints its report: check-v1.json holds that form too
    one = _json("check", "configs/two-heads.yaml", "--format", "json", code=1)
    assert "losses" in one and "specs" not in one
    with pytest.MonkeyPatch.context() as patch:
        _refuse_network(patch)
        for name, data in reports.items():
            jsonschema.validate(data, _load(name))  # plain: no registry, no resolver
        jsonschema.validate(one, _load("check-v1.json"))
        jsonschema.validate(one, _load("report-v1.json"))
        spec = __import__("yaml").safe_load((ROOT / "configs" / "multitask.yaml").read_text())
        jsonschema.validate(spec, _load("spec-v1.json"))


def test_a_wrong_report_fails_its_schema_offline() -> None:
    """The copies are live: a status the report schema does not know fails run-v1.json."""
    jsonschema = pytest.importorskip("jsonschema")
    source = {"status": "maybe", "norm": None, "shape": [1], "sparse": False, "cut_points": []}
    call = {"site": "t.py:1", "api": "GradientTape.gradient", "mode": "eager", "step": 1}
    call |= {"target": {"source": "t.py:1", "value": 1.0}, "sources": {"w": source}}
    report = {"gradscope": 1, "program": "t.py", "argv": ["t.py"], "tensorflow": "2.21.0"}
    report |= {"device": "CPU:0", "calls": [call], "problems": []}
    with pytest.raises(jsonschema.ValidationError, match="'maybe' is not valid"):
        jsonschema.validate(report, _load("run-v1.json"))
