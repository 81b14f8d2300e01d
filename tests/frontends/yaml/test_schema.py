"""The JSON Schema of the spec: current, well-formed, and in agreement with the configs."""

from __future__ import annotations

import json

import pytest
import yaml

from gradscope._src.frontends.yaml import catalog, spec_schema
from gradscope._src.frontends.yaml.tensors import INPUT_FIELDS, VARIABLE_FIELDS
from gradscope._src.frontends.yaml.validate import TOP_FIELDS
from tests.conftest import CONFIGS, ROOT


def test_schema_is_draft_2020_12_and_json():
    schema = spec_schema()
    assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    assert json.loads(json.dumps(schema)) == schema


def test_schema_fields_match_the_validator():
    schema = spec_schema()
    assert set(schema["properties"]) == set(TOP_FIELDS)
    defs = schema["$defs"]
    assert set(defs["input"]["anyOf"][1]["properties"]) == set(INPUT_FIELDS)
    assert set(defs["variable"]["anyOf"][1]["properties"]) == set(VARIABLE_FIELDS)
    assert defs["dtype"]["enum"] == list(catalog.DTYPES)


def test_schema_every_property_has_a_description():
    def walk(node: object, where: str) -> None:
        if isinstance(node, dict):
            for key, value in node.get("properties", {}).items():
                assert "description" in value or "$ref" in value, f"{where}.{key}"
            for key, value in node.items():
                if key != "if":  # a condition, not a field
                    walk(value, f"{where}.{key}")
        elif isinstance(node, list):
            for index, value in enumerate(node):
                walk(value, f"{where}[{index}]")

    walk(spec_schema(), "schema")


def test_schema_checked_in_file_is_current():
    checked_in = json.loads((ROOT / "schema" / "spec-v1.json").read_text(encoding="utf-8"))
    assert checked_in == spec_schema(), "regenerate: gradscope schema > schema/spec-v1.json"


@pytest.mark.parametrize("path", CONFIGS, ids=[p.stem for p in CONFIGS])
def test_schema_accepts_every_config(path):
    jsonschema = pytest.importorskip("jsonschema")
    document = yaml.safe_load(path.read_text(encoding="utf-8"))
    jsonschema.Draft202012Validator(spec_schema()).validate(document)


@pytest.mark.parametrize(
    "document",
    [
        {"losses": {"l": "s"}},
        {"gradscope": 2, "losses": {"l": "s"}},
        {"gradscope": 1, "losses": {"l": "s"}, "variabels": {}},
        {"gradscope": 1, "losses": {"l": "s"}, "variables": {"w": {"shape": [-1]}}},
        {"gradscope": 1, "losses": {"l": "s"}, "nodes": [{"name": "s", "op": "io.write_file"}]},
    ],
)
def test_schema_rejects_bad_documents(document):
    jsonschema = pytest.importorskip("jsonschema")
    assert not jsonschema.Draft202012Validator(spec_schema()).is_valid(document)
