"""The public surface (``gradscope/__init__.py``): what a public function gives back, a user can
name from ``gradscope`` to annotate it, never from ``gradscope._src`` (issue 29 point 7)."""

from __future__ import annotations

import dataclasses
import typing
from collections.abc import Iterator
from typing import Any

import gradscope

#: Types a result holds that are its own nested detail, reached through an exported type's
#: fields and read as attributes, seldom named: kept private so they stay free to change. A
#: new type reachable from a public function lands here or in ``gradscope`` on purpose.
DETAILS = {
    "Agreement",  # DistributedFacts.agreements
    "Box",  # Picture.boxes
    "DistributedFacts",  # Report.distributed
    "Distribution",  # RunReport.distribution
    "Link",  # Picture.links
    "NumericCheck",  # NumericResult.check
    "NumericResult",  # PairResult.numeric
    "NumericRun",  # Report.numeric
    "Pattern",  # NumericResult.pattern
    "Pos",  # Pattern.pos
    "ReplicaResult",  # PairResult.replicas
    "StepSpread",  # DistributedFacts.spreads
    "Stop",  # RunReport.stop
    "VariableFacts",  # Report.variables
}


def _public() -> dict[str, Any]:
    return {name: getattr(gradscope, name) for name in gradscope.__all__}


def _hints(obj: Any) -> dict[str, Any]:
    """``obj``'s annotations resolved, the public names standing in for imports that only
    type checkers see (``api.py`` imports its result types under ``TYPE_CHECKING``)."""
    module = typing.cast(Any, __import__(obj.__module__, fromlist=["_"]))
    names = {**vars(module), **_public()}
    return typing.get_type_hints(obj, globalns=names)


def _reachable(tp: Any, seen: dict[type, str], via: str) -> None:
    for arg in typing.get_args(tp):
        _reachable(arg, seen, via)
    if typing.get_origin(tp) is not None or not isinstance(tp, type):
        return
    if not tp.__module__.startswith("gradscope._src") or tp in seen:
        return
    seen[tp] = via
    hints = _hints(tp) if dataclasses.is_dataclass(tp) else {}
    for field in dataclasses.fields(tp) if dataclasses.is_dataclass(tp) else ():
        if not field.name.startswith("_"):
            _reachable(hints[field.name], seen, f"{tp.__name__}.{field.name}")
    for name, member in vars(tp).items():
        method = member.fget if isinstance(member, property) else member
        if name.startswith("_") or not callable(method) or isinstance(method, type):
            continue
        returned = _hints(method).get("return")
        if returned is not None:
            _reachable(returned, seen, f"{tp.__name__}.{name}()")


def _given_back() -> Iterator[tuple[type, str]]:
    """Every gradscope class a public function returns, or a returned result holds (in a
    field, or as a method's or property's return), with the path that reaches it."""
    seen: dict[type, str] = {}
    for name, obj in _public().items():
        if isinstance(obj, type):
            _reachable(obj, seen, name)
        elif callable(obj) and not isinstance(obj, type(gradscope)):
            _reachable(_hints(obj).get("return"), seen, f"{name}()")
    yield from seen.items()


def test_public_every_result_type_is_named_by_gradscope() -> None:
    unnamed = [
        f"{tp.__module__}.{tp.__name__} (via {via})"
        for tp, via in _given_back()
        if getattr(gradscope, tp.__name__, None) is not tp and tp.__name__ not in DETAILS
    ]
    assert unnamed == []


def test_public_findings_and_their_parts_are_exported() -> None:
    from gradscope._src.location import Location
    from gradscope._src.results.finding import Finding

    assert gradscope.Finding is Finding
    assert gradscope.Location is Location
    finding = gradscope.Finding(gradscope.ProblemKind.NAN, gradscope.Location("x.py", 3), "m")
    assert finding.location == gradscope.Location("x.py", 3)
    assert str(finding.location) == "x.py:3"


def test_public_all_lists_every_lazy_name() -> None:
    assert set(gradscope.__all__) == {*gradscope._LAZY, "__version__"} - {
        "load_ipython_extension",
        "unload_ipython_extension",
    }
    assert list(gradscope.__all__) == sorted(
        gradscope.__all__, key=lambda n: (n[0].islower() or n.startswith("_"), n)
    )
    for name in gradscope.__all__:
        assert getattr(gradscope, name) is not None


def test_public_details_are_reachable_and_unexported() -> None:
    """The list above stays true: each detail is still given back, and still private."""
    reached = {tp.__name__ for tp, _ in _given_back()}
    assert reached >= DETAILS
    assert not [name for name in DETAILS if hasattr(gradscope, name)]
