"""The JSON Schema (draft 2020-12) of spec version 1, for editors and yaml-language-server.

The schema helps an editor complete and check a spec as it is typed; ``gradscope validate``
remains the authority (references between names, shapes and limits are checked only there).
"""

from __future__ import annotations

from typing import Any

from gradscope._src.frontends.yaml import catalog, ops
from gradscope._src.frontends.yaml.model import SPEC_VERSION

_SEED_MAX = 2**63 - 1


def spec_schema() -> dict[str, Any]:
    """The JSON Schema of a spec, with a description on every field.

    Returns:
        A JSON-serializable dict; ``gradscope schema`` prints it.
    """
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": f"gradscope spec, version {SPEC_VERSION}",
        "description": "A small TensorFlow computation whose gradients gradscope inspects.",
        "type": "object",
        "required": ["gradscope", "losses"],
        "additionalProperties": False,
        "properties": _top(),
        "$defs": {**_tensor_defs(), **_node_defs(), **_loss_defs()},
    }


def _top() -> dict[str, Any]:
    def names_to(ref: str, what: str) -> dict[str, Any]:
        return {
            "type": ["object", "null"],
            "description": what,
            "additionalProperties": {"$ref": f"#/$defs/{ref}"},
        }

    return {
        "gradscope": {"const": SPEC_VERSION, "description": "The spec version; required."},
        "name": {"type": "string", "minLength": 1, "description": "Shown in reports."},
        "seed": {
            "type": "integer",
            "minimum": 0,
            "maximum": _SEED_MAX,
            "description": "Seeds every generated value (default 0).",
        },
        "inputs": names_to("input", "Data fed to the model; never trainable."),
        "variables": names_to("variable", "tf.Variable objects; trainable unless told otherwise."),
        "nodes": {
            "type": ["array", "null"],
            "description": "Evaluated in order; each may refer to any earlier name.",
            "items": {"$ref": "#/$defs/node"},
        },
        "losses": {
            "type": "object",
            "minProperties": 1,
            "description": "Loss name -> node name, or a mapping with 'node'.",
            "additionalProperties": {"$ref": "#/$defs/loss"},
        },
        "expect": names_to(
            "expectation", "Per loss: variables with no gradient / connected / numeric."
        ),
    }


def _tensor_fields() -> dict[str, Any]:
    return {
        "shape": {"$ref": "#/$defs/shape"},
        "dtype": {"$ref": "#/$defs/dtype"},
        "values": {"$ref": "#/$defs/values", "description": "Explicit values; shape inferred."},
        "range": {"$ref": "#/$defs/range"},
    }


def _tensor(fields: dict[str, Any], what: str) -> dict[str, Any]:
    return {
        "description": what,
        "anyOf": [
            {"type": "number", "description": "A scalar with this value."},
            {
                "type": "object",
                "additionalProperties": False,
                "properties": fields,
                "anyOf": [{"required": ["shape"]}, {"required": ["values"]}],
            },
        ],
    }


def _tensor_defs() -> dict[str, Any]:
    inits = [*catalog.BUILTIN_INITS, *sorted(catalog.keras_initializers())]
    variable_fields = {
        **_tensor_fields(),
        "init": {
            "enum": inits,
            "description": "normal (default, N(0,1)), uniform, zeros, ones, or a Keras name.",
        },
        "trainable": {"type": "boolean", "description": "Default true."},
    }
    return {
        "input": _tensor(_tensor_fields(), "An input tensor: {shape: [8, 4]} or a number."),
        "variable": _tensor(variable_fields, "A variable: {shape: [4, 16]} or a number."),
        "dtype": {"enum": list(catalog.DTYPES), "description": "Default float32."},
        "shape": {
            "type": "array",
            "items": {"type": "integer", "minimum": 0},
            "description": "A list of non-negative integers; [] is a scalar.",
        },
        "values": {
            "description": "A number, a boolean, or a rectangular nested list of them.",
            "anyOf": [
                {"type": "number"},
                {"type": "boolean"},
                {"type": "array", "items": {"$ref": "#/$defs/values"}},
            ],
        },
        "range": {
            "type": "array",
            "prefixItems": [{"type": "number"}, {"type": "number"}],
            "minItems": 2,
            "maxItems": 2,
            "description": "[low, high): uniform values, low inclusive, high exclusive.",
        },
    }


def _node_defs() -> dict[str, Any]:
    return {
        "node": {
            "type": "object",
            "required": ["name", "op"],
            "additionalProperties": False,
            "properties": {
                "name": {"type": "string", "minLength": 1, "description": "Unique; may hold '/'."},
                "op": {
                    "description": "A TF function relative to tf, or stop_gradient|assign|layer.",
                    "anyOf": [{"enum": ops.spellings()}, {"type": "string", "pattern": "^tf\\."}],
                },
                "inputs": {
                    "description": "Positional (a list) or keyword (a mapping) tensor arguments.",
                    "anyOf": [
                        {"type": "array", "items": {"$ref": "#/$defs/arg"}},
                        {"type": "object", "additionalProperties": {"$ref": "#/$defs/arg"}},
                        {"type": "null"},
                    ],
                },
                "attrs": {
                    "type": ["object", "null"],
                    "description": "Literal keyword arguments, never resolved as names.",
                },
            },
            "if": {"properties": {"op": {"const": "layer"}}, "required": ["op"]},
            "then": {"properties": {"attrs": {"$ref": "#/$defs/layer_attrs"}}},
        },
        **_arg_defs(),
    }


def _arg_defs() -> dict[str, Any]:
    layer_classes = sorted(catalog.layer_classes() | catalog.applications())
    return {
        "arg": {
            "description": "An earlier name (name[0] picks one output), a literal, or a list.",
            "anyOf": [
                {"type": ["string", "number", "boolean", "null"]},
                {"type": "array", "items": {"$ref": "#/$defs/arg"}},
            ],
        },
        "layer_attrs": {
            "type": "object",
            "required": ["class"],
            "additionalProperties": False,
            "properties": {
                "class": {"enum": layer_classes, "description": "A keras.layers class."},
                "config": {"type": "object", "description": "Constructor keyword arguments."},
                "call": {"type": "object", "description": "Literal call keyword arguments."},
            },
        },
    }


def _loss_defs() -> dict[str, Any]:
    strings = {"type": "array", "items": {"type": "string", "minLength": 1}}
    return {
        "loss": {
            "anyOf": [
                {"type": "string", "description": "The node whose value is the loss."},
                {
                    "type": "object",
                    "required": ["node"],
                    "additionalProperties": False,
                    "properties": {
                        "node": {"type": "string", "description": "The loss node."},
                        "grad_loss": {
                            "$ref": "#/$defs/values",
                            "description": "Upstream gradient (output_gradients / grad_loss).",
                        },
                        "vars": {**strings, "description": "Globs: restrict to a var_list."},
                        "stop_gradients": {**strings, "description": "Nodes held constant."},
                    },
                },
            ]
        },
        "expectation": {
            "type": "object",
            "additionalProperties": False,
            "properties": {
                "none": {**strings, "description": "Variables that must get no gradient."},
                "connected": {**strings, "description": "Variables that must get a gradient."},
                "numeric": {
                    **strings,
                    "description": "Variables whose gradient must agree with finite "
                    "differences (check --numeric), even a straight-through estimator's.",
                },
            },
        },
    }
