"""TensorFlow's error messages as one line a user can read: its own words, none of its noise.

A runtime error from a ``tf.function`` reads ``Graph execution error:``, then the Python stack
that built the failing op, then the real message (``indices[2] = 7 is not in [0, 5)``), then
tags like ``[[{{node N0/Gather}}]]`` and ``[Op:__inference__body_57]``. A shape error at trace
time quotes the whole NodeDef (``for '{{node N0/MatMul}} = MatMul[T=DT_FLOAT, ...](...)'``).
Only the real message is kept, and op names (``N3/MatMul``, the scope of spec node 3) can be
renamed to what the user wrote.
"""

from __future__ import annotations

import re
from collections.abc import Callable

#: Paragraphs of a graph-mode error that are TensorFlow's stack listing, not the message.
_STACK_PARAGRAPHS = ("Graph execution error", "Detected at node", "  File ", "Detected at node:")
#: Lines that only advise TensorFlow developers.
_ADVICE_LINES = ("Hint: ", "Hint:")
_TAGS = re.compile(
    r"\{\{function_node [^}]*\}\}"  # {{function_node __inference__body_57}}
    r"|\[\[\{\{node [^]]*\]\]"  # [[{{node N0/Gather}}]]
    r"|\[Op:[^]]*\]"  # [Op:__inference__body_57]
    r"|\s*\(defined at [^)]*\)"
)
# for '{{node N0/MatMul}} = MatMul[T=DT_FLOAT, transpose_a=false](N0/a, N0/b)'
_NODE_DEF = re.compile(r"'\{\{node [^}]*\}\} = (\w+)(?:\[[^']*?\])?\([^']*\)'")
# Keras re-raises an error inside a layer's call as "Exception encountered when calling
# Dense.call().\n\n\x1b[1m<the message>\x1b[0m\n\nArguments received by ...": keep the message.
_KERAS_BOLD = re.compile(r"\x1b\[1m(.*?)\x1b\[0m", re.DOTALL)
_NODE_TAG = re.compile(r"\{\{node ([^}]+)\}\}")
_DEVICE = re.compile(r"/job:\w+/replica:\d+/task:\d+/device:(\w+:\d+)")
#: An op name as TensorFlow prints it: ``N3/MatMul``, ``gradients/N3/MatMul_grad/MatMul``.
OP_NAME = re.compile(r"\b(?:gradients(?:_\d+)?/)?N\d+(?:_\d+)?/[\w./-]*\w")

Rename = Callable[[str], str | None]


def one_line(message: str, limit: int = 400) -> str:
    """A message squeezed onto one line of at most ``limit`` characters.

    Example:
        >>> one_line("shapes differ:\\n  [2, 3] vs [4]")
        'shapes differ: [2, 3] vs [4]'
    """
    text = " ".join(message.split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


def tf_message(text: str, rename: Rename | None = None, limit: int = 400) -> str:
    """TensorFlow's own words from an error, on one line.

    Args:
        text: the error's message (``exc.message`` of a ``tf.errors.OpError``, or ``str(exc)``).
        rename: maps an op name (``N3/MatMul``) to how the user should read it, or returns
            None to leave it as it is.
        limit: the longest line returned.

    Returns:
        The message without TensorFlow's stack listing, NodeDef quotes, tags and advice.

    Example:
        >>> tf_message("Graph execution error:\\n\\nDetected at node N0/Gather defined at ...\\n\\n"
        ...            "indices[2] = 7 is not in [0, 5)\\n\\t [[{{node N0/Gather}}]] [Op:__inf]")
        'indices[2] = 7 is not in [0, 5)'
    """
    bold = _KERAS_BOLD.search(text)
    if bold is not None and text.startswith("Exception encountered when calling"):
        text = bold.group(1)
    paragraphs = [
        p for p in text.strip().split("\n\n") if p.strip() and not p.startswith(_STACK_PARAGRAPHS)
    ]
    body = paragraphs[-1] if paragraphs else text
    lines = [line for line in body.splitlines() if not line.strip().startswith(_ADVICE_LINES)]
    body = _NODE_DEF.sub(r"\1", "\n".join(lines))
    body = _DEVICE.sub(r"\1", _TAGS.sub("", body))
    if rename is not None:
        body = OP_NAME.sub(lambda m: rename(m.group()) or m.group(), body)
    return one_line(body, limit) or one_line(text, limit)


def tagged_op(text: str) -> str | None:
    """The op a TensorFlow runtime error names in its ``{{node ...}}`` tag, if any."""
    match = _NODE_TAG.search(text)
    return match.group(1) if match else None
