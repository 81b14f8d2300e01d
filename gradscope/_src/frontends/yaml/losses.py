"""The ``losses`` and ``expect`` sections -> Loss and Expectation."""

from __future__ import annotations

from gradscope._src.frontends.yaml.arrays import read_values
from gradscope._src.frontends.yaml.context import Context, a, join, suggest
from gradscope._src.frontends.yaml.model import Loss
from gradscope._src.frontends.yaml.tree import YEntry, YMap, YNode, YScalar, YSeq
from gradscope._src.results.expect import Expectation, Pattern

LOSS_FIELDS = ("node", "grad_loss", "vars", "stop_gradients")
EXPECT_FIELDS = ("none", "connected", "numeric")


def read_losses(ctx: Context, node: YNode | None) -> list[Loss]:
    """Every loss, in the short form ``name: node`` or the long form with ``node``."""
    mapping = _section(ctx, node, "losses", "a mapping of loss names to nodes")
    if mapping is None:
        return []
    if not mapping.entries:
        ctx.expected(mapping, "losses", "at least one loss")
    out = []
    for entry in mapping:
        loss = _loss(ctx, entry, join("losses", entry.key))
        if loss is not None:
            out.append(loss)
    return out


def _section(ctx: Context, node: YNode | None, where: str, what: str) -> YMap | None:
    if node is None:
        return None
    return ctx.mapping(node, where, what)


def _loss(ctx: Context, entry: YEntry, where: str) -> Loss | None:
    value = entry.value
    if isinstance(value, YScalar):
        node = _node_name(ctx, value, where)
        return Loss(entry.key, node, None, None, (), entry.key_pos) if node else None
    if not isinstance(value, YMap):
        ctx.expected(value, where, "a node name or a mapping with a 'node' field")
        return None
    found = ctx.fields(value, where, LOSS_FIELDS, required=("node",))
    errors = len(ctx.errors)
    node = _node_name(ctx, found["node"].value, join(where, "node")) if "node" in found else None
    grad_loss = None
    if "grad_loss" in found:
        values = read_values(ctx, found["grad_loss"].value, join(where, "grad_loss"), "float32")
        grad_loss = values.data if values is not None else None
    globs = _strings(ctx, found.get("vars"), join(where, "vars"), "glob patterns")
    stops = _strings(ctx, found.get("stop_gradients"), join(where, "stop_gradients"), "names")
    for index, stop in enumerate(stops or ()):
        _node_name(ctx, stop, join(join(where, "stop_gradients"), index))
    if node is None or len(ctx.errors) > errors:
        return None
    patterns = tuple(str(g.value) for g in globs) if globs is not None else None
    names = tuple(str(s.value) for s in stops or ())
    return Loss(entry.key, node, grad_loss, patterns, names, entry.key_pos)


def _node_name(ctx: Context, node: YNode, where: str) -> str | None:
    name = node.value if isinstance(node, YScalar) else None
    if isinstance(name, str) and ctx.kind_of(name) == "node":
        return name
    kind = ctx.kind_of(name) if isinstance(name, str) else None
    hint = f" ({a(kind)}, not a node)" if kind else ""
    if isinstance(name, str) and not kind:
        hint = suggest(name, ctx.node_names())
    ctx.expected(node, where, "the name of a node", hint)
    return None


def _strings(ctx: Context, entry: YEntry | None, where: str, what: str) -> list[YScalar] | None:
    if entry is None:
        return None
    if not isinstance(entry.value, YSeq):
        ctx.expected(entry.value, where, f"a list of {what}")
        return None
    out = []
    for index, item in enumerate(entry.value.items):
        if isinstance(item, YScalar) and isinstance(item.value, str) and item.value:
            out.append(item)
        else:
            ctx.expected(item, join(where, index), f"a non-empty string ({what})")
    return out


def read_expect(ctx: Context, node: YNode | None, losses: list[str]) -> list[Expectation]:
    """What the author expects of each named loss."""
    if node is None or (isinstance(node, YScalar) and node.value is None):
        return []
    mapping = _section(ctx, node, "expect", "a mapping of loss names to expectations")
    out = []
    for entry in mapping or ():
        where = join("expect", entry.key)
        if entry.key not in losses:
            message = f"expected the name of a loss, saw {entry.key!r}{suggest(entry.key, losses)}"
            ctx.error(entry.key_pos, where, message)
            continue
        body = ctx.mapping(entry.value, where, "a mapping with none, connected and/or numeric")
        if body is None:
            continue
        found = ctx.fields(body, where, EXPECT_FIELDS)
        none = _patterns(ctx, found.get("none"), join(where, "none"))
        connected = _patterns(ctx, found.get("connected"), join(where, "connected"))
        numeric = _patterns(ctx, found.get("numeric"), join(where, "numeric"))
        _overlap(ctx, none, connected, join(where, "connected"))
        _overlap(ctx, none, numeric, join(where, "numeric"))
        out.append(Expectation(entry.key, none, connected, entry.key_pos, numeric))
    return out


def _patterns(ctx: Context, entry: YEntry | None, where: str) -> tuple[Pattern, ...]:
    items = _strings(ctx, entry, where, "glob patterns over variable names")
    return tuple(Pattern(str(item.value), item.pos) for item in items or ())


def _overlap(
    ctx: Context, none: tuple[Pattern, ...], connected: tuple[Pattern, ...], where: str
) -> None:
    globs = {p.glob for p in none}
    for pattern in connected:
        if pattern.glob in globs:
            message = f"expected a pattern not also under none, saw {pattern.glob!r}"
            ctx.error(pattern.pos, where, message)
