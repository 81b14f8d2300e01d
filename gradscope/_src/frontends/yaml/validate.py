"""Located YAML -> a validated Spec, reporting every problem at once."""

from __future__ import annotations

from gradscope._src.errors import SpecErrors
from gradscope._src.frontends.yaml.context import Context, join
from gradscope._src.frontends.yaml.losses import read_expect, read_losses
from gradscope._src.frontends.yaml.model import DEFAULT_MAX_ELEMENTS, SPEC_VERSION, Node, Spec
from gradscope._src.frontends.yaml.nodes import declare_nodes, read_node
from gradscope._src.frontends.yaml.patterns import refuse_unmatched
from gradscope._src.frontends.yaml.special import TensorDef, check_special
from gradscope._src.frontends.yaml.tensors import read_inputs, read_variables
from gradscope._src.frontends.yaml.tree import YEntry, YMap, YNode, YScalar
from gradscope._src.results.expect import Pos

TOP_FIELDS = ("gradscope", "name", "seed", "inputs", "variables", "nodes", "losses", "expect")
#: NumPy and Keras seed generators take 32-bit seeds.
MAX_SEED = 2**32 - 1
#: The most work a spec may ask for, as (nodes + variables) x (losses + 1): tracing and running
#: costs about 1 ms per node for the forward pass and as much again per loss for its backward
#: pass (a 10,000-node chain with one loss takes 20 s here; a spec at the limit a few
#: minutes). Large real models fit: a Keras layer or application is one node.
MAX_WORK = 200_000


def validate(root: YNode, path: str, *, max_elements: int = DEFAULT_MAX_ELEMENTS) -> Spec:
    """Check a loaded spec document and build its :class:`Spec`.

    Args:
        root: the located YAML document (see
            :func:`gradscope._src.frontends.yaml.loader.load_yaml`).
        path: the spec's path, used in every message.
        max_elements: the most elements any input or variable may hold.

    Returns:
        The validated spec.

    Raises:
        SpecErrors: every problem found, in file order.
    """
    ctx = Context(path, max_elements)
    spec = _spec(ctx, root)
    if ctx.errors or spec is None:
        if not ctx.errors:  # pragma: no cover - a spec is only missing after an error
            ctx.error(Pos(1, 1), "", "not a valid spec")
        raise SpecErrors(sorted(ctx.errors, key=lambda e: (e.line, e.column)))
    return spec


def _spec(ctx: Context, root: YNode) -> Spec | None:
    mapping = ctx.mapping(root, "", "a mapping with 'gradscope: 1' at the top of the file")
    if mapping is None:
        return None
    found = ctx.fields(mapping, "", TOP_FIELDS, required=("gradscope", "losses"))
    version = _version(ctx, found.get("gradscope"))
    name = _name(ctx, found.get("name"))
    seed = _seed(ctx, found.get("seed"))
    inputs = read_inputs(ctx, _value(found, "inputs"))
    variables = read_variables(ctx, _value(found, "variables"))
    tensors: dict[str, TensorDef] = {t.name: t for t in inputs}
    tensors.update((v.name, v) for v in variables)
    nodes = _nodes(ctx, _value(found, "nodes"), tensors)
    losses = read_losses(ctx, _value(found, "losses"))
    # Every written loss name counts, so a loss with a bad node does not also fail its expect.
    loss_node = _value(found, "losses")
    loss_names = [e.key for e in loss_node] if isinstance(loss_node, YMap) else []
    expect = read_expect(ctx, _value(found, "expect"), loss_names)
    layers = [n.name for n in nodes if n.op == "layer"]
    refuse_unmatched(ctx, expect, [v.name for v in variables], layers)
    _work(ctx, mapping.pos, len(nodes) + len(variables), len(losses))
    if version is None:
        return None
    return Spec(
        path=ctx.path,
        version=version,
        name=name,
        seed=seed,
        inputs=tuple(inputs),
        variables=tuple(variables),
        nodes=tuple(nodes),
        losses=tuple(losses),
        expect=tuple(expect),
        max_elements=ctx.max_elements,
        pos=mapping.pos,
    )


def _value(found: dict[str, YEntry], key: str) -> YNode | None:
    entry = found.get(key)
    return entry.value if entry is not None else None


def _nodes(ctx: Context, node: YNode | None, tensors: dict[str, TensorDef]) -> list[Node]:
    declared = declare_nodes(ctx, node)
    out = []
    for index, mapping, name in declared:
        built = read_node(ctx, index, mapping, name)
        if built is not None:
            check_special(ctx, built, join("nodes", index), tensors)
            out.append(built)
    return out


def _version(ctx: Context, entry: YEntry | None) -> int | None:
    if entry is None:
        return None  # reported as a missing field
    value = entry.value.value if isinstance(entry.value, YScalar) else None
    if isinstance(value, int) and not isinstance(value, bool) and value == SPEC_VERSION:
        return value
    what = f"the spec version {SPEC_VERSION} (this gradscope reads version {SPEC_VERSION})"
    ctx.expected(entry.value, "gradscope", what)
    return None


def _name(ctx: Context, entry: YEntry | None) -> str | None:
    if entry is None:
        return None
    return ctx.string(entry.value, "name", "a non-empty string")


def _seed(ctx: Context, entry: YEntry | None) -> int:
    if entry is None:
        return 0
    value = entry.value.value if isinstance(entry.value, YScalar) else None
    if isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= MAX_SEED:
        return value
    ctx.expected(entry.value, "seed", f"an integer from 0 to {MAX_SEED}")
    return 0


def _work(ctx: Context, pos: Pos, size: int, losses: int) -> None:
    """Refuse a spec too large to inspect in bounded time."""
    work = size * (losses + 1)
    if work > MAX_WORK:
        ctx.error(
            pos,
            "",
            f"expected at most {MAX_WORK} for (nodes + variables) x (losses + 1), saw "
            f"{size} x {losses + 1} = {work}; split the spec into smaller ones",
        )
