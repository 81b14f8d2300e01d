"""TensorFlow's errors, at build, gradient or run time, become one line naming the node.

Each spec fails somewhere inside TensorFlow; the same computation in bare TensorFlow shows
what TensorFlow itself says, and gradscope must say it too, on one line that starts with
``FILE:LINE:COLUMN: node 'x' (op):``, with exit code 2. gradscope's own failures exit 3 in
two short lines that say where to report them.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from gradscope._src.cli import main
from gradscope._src.engine.messages import tf_message
from gradscope._src.errors import ExitCode

pytestmark = pytest.mark.tf

WriteSpec = Callable[..., str]
#: What must never reach a user's terminal from TensorFlow.
_NOISE = ("{{", "[[", "Graph execution error", "Detected at node", "Traceback", "__inference")


def _inspect(path: str, *extra: str) -> Result:
    return CliRunner().invoke(main, ["inspect", path, "-q", *extra])


def _one_line(result: Result, path: str, line: int, node: str, op: str) -> str:
    """The single error line, checked for its location and node; returns the message."""
    assert result.exit_code == ExitCode.USAGE, result.output
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    prefix = f"{path}:{line}:5: node '{node}' ({op}): "
    assert lines[0].startswith(prefix), lines[0]
    for noise in _NOISE:
        assert noise not in lines[0]
    assert not re.search(r"\bN\d+/", lines[0]), "internal op names leak"
    return lines[0][len(prefix) :]


def _bare_error(fn: Callable[[], object]) -> str:
    """What bare TensorFlow says when ``fn`` runs."""
    with pytest.raises(Exception) as info:  # any TensorFlow error
        fn()
    return str(getattr(info.value, "message", info.value))


def test_shape_mismatch_at_build_names_the_node(write_spec: WriteSpec) -> None:
    import tensorflow as tf

    path = write_spec(
        """\
        gradscope: 1
        inputs:
          x: {shape: [2, 3]}
        variables:
          w: {shape: [4, 5]}
        nodes:
          - {name: m, op: matmul, inputs: [x, w]}
          - {name: s, op: reduce_sum, inputs: [m]}
        losses: {l: s}
        """
    )
    w = tf.Variable(tf.ones([4, 5]))
    bare = _bare_error(tf.function(lambda: tf.matmul(tf.ones([2, 3]), w)).get_concrete_function)
    core = re.search(r"Dimensions must be equal, but are 3 and 4", bare)
    assert core is not None, bare
    message = _one_line(_inspect(path), path, 7, "m", "matmul")
    assert message.startswith(core.group())
    assert "with input shapes: [2,3], [4,5]" in message


def test_dtype_mismatch_at_build_names_the_node(write_spec: WriteSpec) -> None:
    import tensorflow as tf

    path = write_spec(
        """\
        gradscope: 1
        inputs:
          x: {shape: [2, 3], dtype: int32}
        variables:
          w: {shape: [3, 5]}
        nodes:
          - {name: m, op: matmul, inputs: [x, w]}
          - {name: s, op: reduce_sum, inputs: [m]}
        losses: {l: s}
        """
    )
    bare = _bare_error(lambda: tf.matmul(tf.ones([2, 3], tf.int32), tf.ones([3, 5])))
    assert "float" in bare and "int32" in bare
    message = _one_line(_inspect(path), path, 7, "m", "matmul")
    assert "float32" in message and "int32" in message


def test_error_only_at_run_time_names_the_node(write_spec: WriteSpec) -> None:
    import tensorflow as tf

    path = write_spec(
        """\
        gradscope: 1
        inputs:
          idx: {shape: [4], dtype: int32, values: [0, 1, 7, 2]}
        variables:
          w: {shape: [5, 3]}
        nodes:
          - {name: g, op: gather, inputs: [w, idx]}
          - {name: s, op: reduce_sum, inputs: [g]}
        losses: {l: s}
        """
    )
    bare = _bare_error(lambda: tf.gather(tf.ones([5, 3]), [0, 1, 7, 2]))
    core = re.search(r"indices\[2\] = 7 is not in \[0, 5\)", bare)
    assert core is not None, bare
    assert _one_line(_inspect(path), path, 7, "g", "gather") == core.group()


def test_keras_layer_errors_name_the_layer_node(write_spec: WriteSpec) -> None:
    import keras
    import tensorflow as tf

    path = write_spec(
        """\
        gradscope: 1
        inputs:
          x: {shape: [2, 3]}
          ids: {shape: [4], dtype: int32, values: [0, 1, 9, 2]}
        nodes:
          - {name: c, op: layer, inputs: [x], attrs: {class: Conv2D, config: {filters: 2, kernel_size: 3}}}
          - {name: e, op: layer, inputs: [ids], attrs: {class: Embedding, config: {input_dim: 5, output_dim: 3}}}
          - {name: s, op: reduce_sum, inputs: [e]}
        losses: {l: s}
        """  # noqa: E501
    )
    bare = _bare_error(lambda: keras.layers.Conv2D(2, 3)(tf.ones([2, 3])))
    assert "expected min_ndim=4, found ndim=2" in bare
    message = _one_line(_inspect(path), path, 6, "c", "layer")
    assert "expected min_ndim=4, found ndim=2" in message
    # without the broken Conv2D, the Embedding fails only when the function runs
    fixed = path.replace("spec.yaml", "embedding.yaml")
    text = Path(path).read_text(encoding="utf-8")
    Path(fixed).write_text(text.replace("  - {name: c,", "  # - {name: c,"), encoding="utf-8")
    bare = _bare_error(lambda: keras.layers.Embedding(5, 3)(tf.constant([0, 1, 9, 2])))
    core = re.search(r"indices\[2\] = 9 is not in \[0, 5\)", bare)
    assert core is not None, bare
    assert _one_line(_inspect(fixed), fixed, 7, "e", "layer") == core.group()


def test_keras_call_error_keeps_only_the_message(write_spec: WriteSpec) -> None:
    path = write_spec(
        """\
        gradscope: 1
        inputs:
          q: {shape: [2, 3, 4]}
          v: {shape: [2, 5, 6]}
        nodes:
          - {name: att, op: layer, inputs: {query: q, value: v}, attrs: {class: MultiHeadAttention, config: {num_heads: 2, key_dim: 2}, call: {attention_mask: 3}}}
          - {name: s, op: reduce_sum, inputs: [att]}
        losses: {l: s}
        """  # noqa: E501
    )
    message = _one_line(_inspect(path), path, 6, "att", "layer")
    assert "Exception encountered" not in message and "Arguments received" not in message
    assert "\x1b[" not in message


@pytest.mark.slow
def test_out_of_memory_names_the_node(write_spec: WriteSpec) -> None:
    """A tensor the machine cannot hold (2**40 floats, allowed by a raised element limit) is
    refused by the model's byte budget before TensorFlow's allocator could fail."""

    path = write_spec(
        """\
        gradscope: 1
        variables:
          w: {shape: [2]}
        nodes:
          - {name: r, op: random.normal, attrs: {shape: [1099511627776]}}
          - {name: s, op: reduce_sum, inputs: [r]}
          - {name: l, op: add, inputs: [s, w]}
        losses: {l: l}
        """
    )
    message = _one_line(_inspect(path, "--max-elements", str(2**41)), path, 5, "r", "random.normal")
    assert message.startswith("brings the model's tensors to 4096.0 GiB (every forward tensor")
    assert message.endswith("more than the 8 GiB a spec may use")


def test_grad_loss_of_the_wrong_shape_names_the_loss(write_spec: WriteSpec) -> None:
    path = write_spec(
        """\
        gradscope: 1
        variables:
          w: {shape: [2, 3]}
        nodes:
          - {name: y, op: square, inputs: [w]}
        losses:
          l: {node: y, grad_loss: [[1.0, 2.0]]}
        """
    )
    result = _inspect(path)
    assert result.exit_code == ExitCode.USAGE, result.output
    assert result.stderr.strip() == (
        f"{path}:7:3: losses.l: grad_loss has shape [1, 2], which does not fit the loss's "
        "shape [2, 3]; give a number or a nested list of that shape"
    )


def test_trace_error_maps_op_names_and_unattributed_errors(write_spec: WriteSpec) -> None:
    import tensorflow as tf

    from gradscope._src.errors import BuildError
    from gradscope._src.frontends.yaml import load_spec
    from gradscope._src.frontends.yaml.forward.model import SpecModel

    path = write_spec(
        """\
        gradscope: 1
        variables:
          w: {shape: [3]}
        nodes:
          - {name: t, op: sin, inputs: [w]}
          - {name: loss, op: reduce_sum, inputs: [t]}
        losses: {l: loss}
        """
    )
    model = SpecModel(load_spec(path))
    gradient_time = ValueError(
        "Incompatible shapes between op input and calculated input gradient. "
        "Forward operation: N1/Sum. Input index: 0."
    )
    error = model.trace_error(gradient_time)
    assert isinstance(error, BuildError)
    assert str(error) == (
        f"{path}:6:5: node 'loss' (reduce_sum): Incompatible shapes between op input and "
        "calculated input gradient. Forward operation: node 'loss' (Sum). Input index: 0."
    )
    unattributed = tf.errors.UnknownError(None, None, "Graph execution error:\n\nsomething broke")
    error = model.trace_error(unattributed)
    assert str(error) == f"{path}:1:1: TensorFlow failed running the spec: something broke"
    ours = KeyError("a bug in gradscope")
    assert model.trace_error(ours) is ours  # not TensorFlow's: stays gradscope's own failure


def test_internal_error_is_two_short_lines_with_the_traceback_hint(
    write_spec: WriteSpec, monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken(*_args: object, **_kwargs: object) -> None:
        raise RuntimeError("boom\n\n" + "details " * 200)

    monkeypatch.setattr("gradscope._src.engine.status.classify", broken)
    monkeypatch.setattr("gradscope._src.pipeline.classify", broken)
    path = write_spec(
        "gradscope: 1\nvariables: {w: {shape: [2]}}\n"
        "nodes: [{name: s, op: reduce_sum, inputs: [w]}]\nlosses: {l: s}\n"
    )
    result = _inspect(path)
    assert result.exit_code == ExitCode.INTERNAL
    first, second = result.stderr.strip().splitlines()
    assert first.startswith("gradscope inspect: internal error: RuntimeError: boom details")
    assert len(first) <= 300
    assert "report it" in second and "--traceback" in second


def test_tf_message_keeps_tensorflows_words_only() -> None:
    graph_mode = (
        "Graph execution error:\n\nDetected at node N0/Gather defined at (most recent call "
        'last):\n  File "x.py", line 5, in <module>\n\n  File "y.py", line 9, in f\n\n'
        "indices[2] = 7 is not in [0, 5)\n\t [[{{node N0/Gather}}]] [Op:__inference__body_57]"
    )
    assert tf_message(graph_mode) == "indices[2] = 7 is not in [0, 5)"
    node_def = (
        "Dimensions must be equal, but are 3 and 4 for '{{node N0/MatMul}} = MatMul[T=DT_FLOAT, "
        "transpose_a=false](N0/a, N0/ReadVariableOp)' with input shapes: [2,3], [4,5]."
    )
    assert tf_message(node_def) == (
        "Dimensions must be equal, but are 3 and 4 for MatMul with input shapes: [2,3], [4,5]."
    )
    oom = (
        "Graph execution error:\n\nOOM when allocating tensor with shape[8] and type float on "
        "/job:localhost/replica:0/task:0/device:CPU:0 by allocator mklcpu\n\t [[{{node N2/r}}]]"
        "\nHint: If you want to see a list of allocated tensors when OOM happens, add "
        "report_tensor_allocations_upon_oom to RunOptions.\n [Op:__inference__body_9]"
    )
    assert tf_message(oom) == (
        "OOM when allocating tensor with shape[8] and type float on CPU:0 by allocator mklcpu"
    )
    keras_call = (
        "Exception encountered when calling Dense.call().\n\n\x1b[1mbad input\x1b[0m\n\n"
        "Arguments received by Dense.call():\n  • inputs=tf.Tensor(shape=(2,))"
    )
    assert tf_message(keras_call) == "bad input"
    renamed = tf_message("Forward operation: N3/Sum_1.", lambda name: f"<{name}>")
    assert renamed == "Forward operation: <N3/Sum_1>."


_DENSE = "{class: Dense, config: {units: 2}}"
_MHA = "{class: MultiHeadAttention, config: {num_heads: 1, key_dim: 2}}"


@pytest.mark.parametrize(
    ("variables", "nodes", "line", "node", "named"),
    [
        (
            ["d1/kernel: {shape: [2, 2]}"],
            [f"{{name: d1, op: layer, attrs: {_DENSE}, inputs: [x]}}"],
            7, "d1", "variable 'd1/kernel' (line 5)",
        ),
        (
            [],
            [f"{{name: d1, op: layer, attrs: {_DENSE}, inputs: [x]}}",
             "{name: d1/kernel, op: reduce_sum, inputs: [d1]}"],
            5, "d1", "node 'd1/kernel' (line 6)",
        ),
        (
            [],
            [f"{{name: m, op: layer, attrs: {_MHA}, inputs: [x, x]}}",
             f"{{name: m/query, op: layer, attrs: {_DENSE}, inputs: [x]}}"],
            6, "m/query", "a weight of layer node 'm' (line 5)",
        ),
    ],
)  # fmt: skip
def test_a_layer_weight_named_like_another_name_is_refused(
    write_spec: WriteSpec, variables: list[str], nodes: list[str], line: int, node: str,
    named: str,
) -> None:  # fmt: skip
    """Reports key variables by name: a clash would merge two variables' rows into one."""
    text = "gradscope: 1\ninputs:\n  x: {shape: [1, 3, 2]}\n"
    text += "variables:\n" + "".join(f"  {v}\n" for v in variables) if variables else ""
    text += "nodes:\n" + "".join(f"  - {n}\n" for n in nodes)
    text += f"  - {{name: total, op: reduce_sum, inputs: [{node}]}}\nlosses: {{l: total}}\n"
    path = write_spec(text)
    message = _one_line(_inspect(path), path, line, node, "layer")
    assert message.startswith(f"its weight '{node}/kernel' has the same name as {named};"), message
