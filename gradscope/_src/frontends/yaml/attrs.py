"""What a TensorFlow op's literal ``attrs`` may hold: numbers, booleans, lists, plain options.

A string reaching a TensorFlow function can be a file name (``vocab_file`` of
``fixed_unigram_candidate_sampler`` opens it), a ``gs://`` address, or a value whose size
gradscope cannot see. So a string is accepted only for a parameter reviewed to take a plain
option (``padding: SAME``, ``data_format: NHWC``, an ``einsum`` equation), and only when it
looks like one: short, with no path separator, colon or scheme.
"""

from __future__ import annotations

import re

from gradscope._src.frontends.yaml.context import Context, join
from gradscope._src.frontends.yaml.tree import YMap, YNode, YScalar, YSeq

#: Parameters of TensorFlow functions that take a string as an option value, never a name of
#: anything outside the computation (reviewed from every allowed function's signature).
PLAIN_STRING_PARAMS = frozenset(
    {
        "alg", "align", "bad_indices_policy", "combiner", "data_format", "diagonals_format",
        "direction", "equation", "fill_mode", "interpolation", "method", "mode", "name",
        "noise", "ord", "padding", "pooling_type", "select", "side",
    }
)  # fmt: skip
#: What a plain option looks like: letters, digits, ``_``, ``,``, ``.``, ``-``, ``>`` and
#: spaces (``ij,jk->ik``, ``...ij->...ji``, ``SAME``); no ``/``, ``:`` or ``\``.
_PLAIN = re.compile(r"^[A-Za-z0-9_,.\-> ]{0,64}$")


def check_attr(ctx: Context, key: str, node: YNode, where: str) -> None:
    """Record an error for anything in a TensorFlow op's attr that is not a plain value."""
    if isinstance(node, YMap):
        ctx.expected(
            node, where, "a number, a boolean, a list or a plain option string",
            " (a TensorFlow op's attrs are literal values)",
        )  # fmt: skip
    elif isinstance(node, YSeq):
        for index, item in enumerate(node.items):
            check_attr(ctx, key, item, join(where, index))
    elif isinstance(node, YScalar) and isinstance(node.value, str):
        _check_string(ctx, key, node, where)


def _check_string(ctx: Context, key: str, node: YScalar, where: str) -> None:
    text = str(node.value)
    if key not in PLAIN_STRING_PARAMS:
        ctx.error(
            node.pos,
            where,
            f"refused: a string for {key!r}; a string may name a file, so only option "
            "parameters (padding, data_format, method, an einsum equation, ...) take strings",
        )
    elif not _PLAIN.match(text):
        ctx.error(
            node.pos,
            where,
            f"expected a plain option (letters, digits, _ , . - > and spaces, at most 64 "
            f"characters), saw {text[:40]!r}",
        )


#: The most values (numbers, names, list items) one node's inputs and attrs may hold. Some
#: TensorFlow functions make ops per item (``math.polyval`` per coefficient, ``add_n`` per
#: input): 400,000 of them took minutes to trace. Large values belong in an input or a
#: variable, made from a shape and an init.
MAX_NODE_VALUES = 10_000


def count_values(node: YNode) -> int:
    """How many scalars a YAML value holds, at any depth."""
    if isinstance(node, YSeq):
        return sum(count_values(item) for item in node.items)
    if isinstance(node, YMap):
        return sum(count_values(entry.value) for entry in node)
    return 1


def check_size(ctx: Context, mapping: YMap, where: str) -> None:
    """Refuse a node whose inputs and attrs hold more than ``MAX_NODE_VALUES`` values."""
    total = sum(count_values(e.value) for e in mapping if e.key in ("inputs", "attrs"))
    if total > MAX_NODE_VALUES:
        ctx.error(
            mapping.pos,
            where,
            f"expected at most {MAX_NODE_VALUES} values in a node's inputs and attrs, saw "
            f"{total}; give large values as an input or variable (a shape and an init, or "
            "values)",
        )
