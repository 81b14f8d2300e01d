"""The validator: exact dataclasses for valid specs, every problem located for bad ones."""

from __future__ import annotations

import pytest

from gradscope._src.errors import SpecErrors
from gradscope._src.frontends.yaml import (
    Expectation,
    InputDef,
    ListArg,
    Literal,
    Loss,
    Pattern,
    Pos,
    Ref,
    VariableDef,
    load_spec,
    load_specs,
)
from tests.conftest import CONFIGS, ROOT

CONTRACT_EXAMPLE = """\
gradscope: 1
name: multitask
seed: 0
inputs:
  x:      {shape: [8, 4]}
  ids:    {shape: [6], dtype: int32, values: [0, 1, 2, 3, 4, 1]}
  labels: {shape: [8], dtype: int32, range: [0, 3]}
variables:
  body/w:  {shape: [4, 16]}
  task1/w: {shape: [16, 3], init: glorot_uniform}
  task2/w: {shape: [16, 3], init: zeros}
  patch:   {values: [[0.0, 1.0], [2.0, 3.0]]}
  step:    {shape: [], trainable: false, init: zeros}
  spare:   {shape: [3]}
nodes:
  - {name: h,       op: matmul, inputs: [x, body/w]}
  - {name: h_act,   op: relu,   inputs: [h]}
  - {name: logits1, op: matmul, inputs: [h_act, task1/w]}
  - {name: logits2, op: matmul, inputs: [h_act, task2/w]}
  - {name: ce1, op: nn.sparse_softmax_cross_entropy_with_logits,
     inputs: {labels: labels, logits: logits1}}
  - {name: loss1, op: reduce_mean, inputs: [ce1]}
  - {name: loss2, op: reduce_mean, inputs: [logits2]}
  - {name: frozen, op: stop_gradient, inputs: [logits1]}
  - {name: y, op: tensordot, inputs: [frozen, task2/w], attrs: {axes: [[1], [1]]}}
  - {name: loss5, op: reduce_sum, inputs: [y]}
losses:
  loss_1: loss1
  loss_2: {node: loss2, grad_loss: -1.0}
  loss_3: {node: loss1, vars: ["task1/*"]}
  loss_4: {node: loss2, stop_gradients: [h_act]}
  loss_5: loss5
expect:
  loss_1:
    none: ["task2/*"]
    connected: ["body/*", "task1/*"]
"""

HEAD = "gradscope: 1\n"
TAIL = "nodes:\n  - {name: s, op: reduce_sum, inputs: [w]}\nlosses: {l: s}\n"


def _errors(path: str, **kwargs: int) -> list[str]:
    with pytest.raises(SpecErrors) as info:
        load_spec(path, **kwargs)
    return [f"{e.line}:{e.column}: {e.field}: {e.message}" for e in info.value.errors]


def _one(write_spec, text: str) -> str:
    errors = _errors(write_spec(text))
    assert len(errors) == 1, errors
    return errors[0]


@pytest.mark.parametrize("path", CONFIGS, ids=[p.stem for p in CONFIGS])
def test_validate_every_config(path):
    spec = load_spec(str(path))
    assert spec.losses and spec.expect
    assert spec.path == str(path)


def test_validate_contract_example_inputs_and_variables(write_spec):
    spec = load_spec(write_spec(CONTRACT_EXAMPLE))
    assert (spec.version, spec.name, spec.seed, spec.pos) == (1, "multitask", 0, Pos(1, 1))
    assert spec.inputs[0] == InputDef("x", (8, 4), "float32", None, None, Pos(5, 3))
    assert spec.inputs[1] == InputDef("ids", (6,), "int32", (0, 1, 2, 3, 4, 1), None, Pos(6, 3))
    assert spec.inputs[2].range == (0, 3)
    w, task1, task2, patch, step, spare = spec.variables
    assert w == VariableDef("body/w", (4, 16), "float32", "normal", None, None, True, Pos(9, 3))
    assert (task1.init, task2.init) == ("glorot_uniform", "zeros")
    assert (patch.shape, patch.values) == ((2, 2), ((0.0, 1.0), (2.0, 3.0)))
    assert (step.shape, step.trainable) == ((), False)
    assert spare.shape == (3,)


def test_validate_contract_example_nodes(write_spec):
    spec = load_spec(write_spec(CONTRACT_EXAMPLE))
    h = spec.node("h")
    assert (h.op, h.target, h.pos) == ("matmul", "matmul", Pos(16, 5))
    assert h.args == (Ref("x", None, Pos(16, 42)), Ref("body/w", None, Pos(16, 45)))
    assert spec.node("h_act").target == "nn.relu"
    assert spec.node("loss1").target == "reduce_mean"
    ce1 = spec.node("ce1")
    assert ce1.target == "nn.sparse_softmax_cross_entropy_with_logits"
    assert [key for key, _ in ce1.kwargs] == ["labels", "logits"]
    assert ce1.refs()[1] == Ref("logits1", None, Pos(21, 39))
    frozen = spec.node("frozen")
    assert frozen.target == "gradscope.stop_gradient" and frozen.is_special
    y = spec.node("y")
    assert y.attrs == {"axes": [[1], [1]]}
    assert y.field_pos["attrs.axes"] == Pos(25, 71)
    assert y.field_pos["op"] == Pos(25, 19)


def test_validate_contract_example_losses_and_expect(write_spec):
    spec = load_spec(write_spec(CONTRACT_EXAMPLE))
    assert spec.loss("loss_1") == Loss("loss_1", "loss1", None, None, (), Pos(28, 3))
    assert spec.loss("loss_2").grad_loss == -1.0
    assert spec.loss("loss_3").vars == ("task1/*",)
    assert not spec.loss("loss_3").includes("task2/w")
    assert spec.loss("loss_4").stop_gradients == ("h_act",)
    assert spec.expectation("loss_1") == Expectation(
        "loss_1",
        (Pattern("task2/*", Pos(35, 12)),),
        (Pattern("body/*", Pos(36, 17)), Pattern("task1/*", Pos(36, 27))),
        Pos(34, 3),
    )


def test_validate_scalar_shorthands(write_spec):
    spec = load_spec(write_spec(HEAD + "variables:\n  w: 2.5\n  v: {values: 3}\n" + TAIL))
    assert spec.variables[0] == VariableDef(
        "w", (), "float32", "normal", 2.5, None, True, Pos(3, 3)
    )
    assert (spec.variables[1].shape, spec.variables[1].values) == ((), 3.0)


def test_validate_one_number_fills_a_shape(write_spec):
    spec = load_spec(write_spec(HEAD + "variables:\n  w: {shape: [2, 3], values: 1}\n" + TAIL))
    assert (spec.variables[0].shape, spec.variables[0].values) == ((2, 3), 1.0)


def test_validate_integer_and_bool_values_keep_their_type(write_spec):
    text = (
        HEAD + "inputs:\n  i: {values: [1, 2], dtype: int64}\n  b: {values: [true], dtype: bool}\n"
    )
    spec = load_spec(write_spec(text + "variables:\n  w: 1.0\n" + TAIL))
    assert spec.inputs[0].values == (1, 2) and isinstance(spec.inputs[0].values[0], int)
    assert spec.inputs[1].values == (True,)


def test_validate_empty_values_have_shape_zero(write_spec):
    spec = load_spec(write_spec(HEAD + "variables:\n  w: {values: [[], []]}\n" + TAIL))
    assert spec.variables[0].shape == (2, 0)


def test_validate_range_implies_uniform_init(write_spec):
    spec = load_spec(write_spec(HEAD + "variables:\n  w: {shape: [2], range: [-1, 1]}\n" + TAIL))
    assert (spec.variables[0].init, spec.variables[0].range) == ("uniform", (-1, 1))


@pytest.mark.parametrize(
    ("definition", "message"),
    [
        ("{shape: [2], range: [0, 1], init: normal}", "expected init: uniform with a range"),
        ("{shape: [2], dtype: int32, init: glorot_uniform}", "Keras initializers need a float"),
        ("{values: [1.0], init: ones}", "expected either values or init, saw both"),
        ("{shape: [2], init: GlorotUniform, dtype: float16}", None),
        ("{shape: [2], range: [0, .inf]}", "expected [low, high] with two numbers"),
        ("{dtype: int32}", "expected a shape or values field, saw neither"),
        ("{shape: [2], dtype: bool, range: [0, 1]}", "no range for dtype bool"),
    ],
)
def test_validate_variable_definitions(write_spec, definition: str, message: str | None):
    path = write_spec(HEAD + f"variables:\n  w: {definition}\n" + TAIL)
    if message is None:
        load_spec(path)
    else:
        assert message in _one(write_spec, HEAD + f"variables:\n  w: {definition}\n" + TAIL)


def test_validate_indexed_reference_and_exact_names(write_spec):
    text = HEAD + (
        "variables:\n  w: {shape: [4]}\n  'w[1]': 1.0\n"
        "nodes:\n"
        "  - {name: parts, op: split, inputs: [w], attrs: {num_or_size_splits: 2}}\n"
        "  - {name: s, op: add, inputs: ['parts[1]', 'w[1]']}\n"
        "losses: {l: s}\n"
    )
    spec = load_spec(write_spec(text))
    first, second = spec.node("s").args
    assert first == Ref("parts", 1, Pos(7, 33))
    assert second == Ref("w[1]", None, Pos(7, 45))


def test_validate_list_and_literal_arguments(write_spec):
    text = HEAD + (
        "variables:\n  a: {shape: [2]}\n  b: {shape: [2]}\n"
        "nodes:\n  - {name: c, op: concat, inputs: [[a, b], 0]}\n"
        "  - {name: s, op: reduce_sum, inputs: {input_tensor: c, keepdims: false}}\n"
        "losses: {l: s}\n"
    )
    spec = load_spec(write_spec(text))
    items, axis = spec.node("c").args
    assert isinstance(items, ListArg) and items.items == (
        Ref("a", None, Pos(6, 37)),
        Ref("b", None, Pos(6, 40)),
    )
    assert axis == Literal(0, Pos(6, 44))
    assert spec.node("s").kwargs[1] == ("keepdims", Literal(False, Pos(7, 67)))
    assert spec.node("c").target == "concat"


def test_validate_dtype_attrs(write_spec):
    base = HEAD + "variables:\n  w: {shape: [2]}\nnodes:\n"
    ok = base + "  - {name: s, op: cast, inputs: [w], attrs: {dtype: int32}}\nlosses: {l: s}\n"
    assert load_spec(write_spec(ok)).node("s").attrs == {"dtype": "int32"}
    bad = base + "  - {name: s, op: zeros, attrs: {shape: [2], out_dtype: 3}}\nlosses: {l: s}\n"
    assert "nodes[0].attrs.out_dtype: expected a dtype name" in _one(write_spec, bad)


def test_validate_an_argument_given_twice(write_spec):
    text = HEAD + "variables:\n  w: {shape: [2]}\nnodes:\n"
    text += "  - {name: s, op: reduce_sum, inputs: {input_tensor: w, axis: 0}, attrs: {axis: 0}}\n"
    assert "expected each argument once" in _one(write_spec, text + "losses: {l: s}\n")


def test_validate_assign(write_spec):
    text = HEAD + (
        "variables:\n  x: {shape: [2, 3]}\n  patch: {shape: [2, 2]}\n"
        "nodes:\n"
        "  - {name: a, op: assign, inputs: {ref: x, value: patch}, attrs: {begin: [0, 1]}}\n"
        "  - {name: b, op: assign, inputs: {ref: x, value: [[1, 2, 3], [4, 5, 6]]}}\n"
        "  - {name: s, op: reduce_sum, inputs: [x]}\n"
        "losses: {l: s}\n"
    )
    spec = load_spec(write_spec(text))
    assert spec.node("a").target == "gradscope.assign"
    assert dict(spec.node("a").kwargs)["ref"] == Ref("x", None, Pos(6, 41))


@pytest.mark.parametrize(
    ("node", "message"),
    [
        ("{name: a, op: assign, inputs: [x, p]}", "expected a mapping {ref: VARIABLE"),
        ("{name: a, op: assign, inputs: {ref: x}}", "saw keys ref"),
        ("{name: a, op: assign, inputs: {ref: x, value: i}}", "expected a float32 value like x"),
        ("{name: a, op: assign, inputs: {ref: x, value: 1.0}}", "expected the shape of x, [2, 3]"),
        ("{name: a, op: assign, inputs: {ref: x, value: p}, attrs: {start: [0, 0]}}", "'begin'"),
        ("{name: a, op: assign, inputs: {ref: x, value: p}, attrs: {begin: [0, 2]}}", "fits"),
        ("{name: a, op: stop_gradient, inputs: [1.0]}", "saw a literal"),
        ("{name: a, op: stop_gradient, inputs: [x], attrs: {name: n}}", "expected no attrs"),
        ("{name: a, op: layer, inputs: [x]}", "expected a keras.layers class"),
        ("{name: a, op: layer, attrs: {class: Dense}}", "expected at least one input"),
        ("{name: a, op: layer, inputs: [x], attrs: {class: Dense, config: 3}}", "saw 3"),
        ("{name: a, op: layer, inputs: [x], attrs: {class: Dense, confg: {}}}", "'config'"),
        ("{name: a, op: layer, inputs: [x], attrs: {class: TFSMLayer}}", "refused: TFSMLayer"),
    ],
)
def test_validate_special_ops(write_spec, node: str, message: str):
    text = HEAD + "inputs:\n  i: {shape: [2, 2], dtype: int32}\n"
    text += "variables:\n  x: {shape: [2, 3]}\n  p: {shape: [2, 2]}\n"
    text += f"nodes:\n  - {node}\n  - {{name: s, op: reduce_sum, inputs: [x]}}\nlosses: {{l: s}}\n"
    errors = _errors(write_spec(text))
    assert any(message in error for error in errors), errors


def test_validate_layers(write_spec):
    text = HEAD + "inputs:\n  x: {shape: [2, 4]}\nnodes:\n"
    text += "  - {name: d1, op: layer, inputs: [x], attrs: {class: Dense, config: {units: 3}}}\n"
    text += "  - {name: r, op: layer, inputs: [x], attrs: {class: ResNet50, "
    text += "config: {weights: null}, call: {training: false}}}\n"
    text += "  - {name: s, op: reduce_sum, inputs: [d1]}\nlosses: {l: s}\n"
    spec = load_spec(write_spec(text))
    assert spec.node("d1").attrs == {"class": "Dense", "config": {"units": 3}}
    assert spec.node("r").attrs["call"] == {"training": False}


def test_validate_reports_every_problem_in_file_order(write_spec):
    text = (
        "gradscope: 1\nseed: x\n"
        "variables:\n  w: {shape: [-1]}\n  v: {shape: [2], dtype: flaot32}\n"
        "nodes:\n  - {name: s, op: nope_op, inputs: [w]}\n"
        "losses: {l: t}\n"
    )
    errors = _errors(write_spec(text))
    assert [e.split(":")[0] for e in errors] == ["2", "4", "5", "7", "8"]
    assert all("\n" not in e for e in errors)


def test_validate_element_limit_applies_to_values(write_spec):
    path = write_spec(HEAD + "variables:\n  w: {values: [1, 2, 3, 4, 5]}\n" + TAIL)
    assert "expected at most 4 elements" in _errors(path, max_elements=4)[0]
    assert load_spec(path, max_elements=5).max_elements == 5


def test_validate_empty_sections_are_allowed(write_spec):
    spec = load_spec(write_spec(HEAD + "inputs:\nexpect:\nvariables:\n  w: 1.0\n" + TAIL))
    assert spec.inputs == () and spec.expect == ()


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        ("expect:\n  l: {none: [w], connected: [w]}\n", "expected a pattern not also under none"),
        ("expect:\n  l: [w]\n", "expected a mapping with none, connected and/or numeric"),
        ("expect:\n  l: {none: [1]}\n", "expected a non-empty string"),
        ("name: ''\n", "name: expected a non-empty string"),
    ],
)
def test_validate_expect_and_name(write_spec, extra: str, message: str):
    text = HEAD + "variables:\n  w: 1.0\n" + TAIL + extra
    assert message in _one(write_spec, text)


def test_validate_bad_loss_forms(write_spec):
    text = HEAD + "variables:\n  w: 1.0\n" + TAIL.replace("losses: {l: s}", "losses: {l: [s]}")
    assert "expected a node name or a mapping with a 'node' field" in _one(write_spec, text)


def test_load_specs_collects_errors_across_files(write_spec):
    good = str(CONFIGS[0])
    bad1 = write_spec("gradscope: 2\n", "a.yaml")
    bad2 = write_spec("gradscope: 1\nlosses: {l: nope}\n", "b.yaml")
    assert len(load_specs([good])) == 1
    with pytest.raises(SpecErrors) as info:
        load_specs([bad1, good, bad2])
    assert {e.path for e in info.value.errors} == {bad1, bad2}


def test_validate_root_paths_are_kept_verbatim():
    relative = str(CONFIGS[0].relative_to(ROOT))
    assert relative.startswith("configs/")


def test_validate_a_bad_loss_does_not_also_fail_its_expect(write_spec):
    text = HEAD + "variables:\n  w: 1.0\n" + TAIL.replace("{l: s}", "{l: nope}")
    error = _one(write_spec, text + "expect:\n  l: {none: [w]}\n")
    assert "losses.l: expected the name of a node" in error


def test_validate_accepts_a_ten_thousand_node_spec(write_spec):
    """The benchmark's size (issue 7): the work budget refuses only far larger specs."""
    nodes = "".join(
        f"  - {{name: n{i}, op: sin, inputs: [{f'n{i - 1}' if i else 'w'}]}}\n"
        for i in range(10_000)
    )
    text = "gradscope: 1\nvariables:\n  w: {shape: [16]}\nnodes:\n" + nodes
    spec = load_spec(write_spec(text + "losses:\n  total: n9999\n  early: n10\n"))
    assert len(spec.nodes) == 10_000 and len(spec.losses) == 2
