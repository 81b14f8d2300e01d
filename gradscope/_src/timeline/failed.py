"""A train step that raised, said by the Keras ``Monitor`` before the exception goes on.

``fit`` on a model whose output is a ``Lambda(argmax)`` raises Keras' "No gradients provided
for any variable" at its first step; ``gradscope run`` names the ``ArgMax`` at the Lambda's
line. The Monitor says the same, on standard error, then lets the exception go on
unchanged::

    gradscope.keras.Monitor: fit at train.py:18 raised ValueError in step 1, which got no
    gradient for 2 of its variables:
      fit at train.py:18 gives dense/kernel, dense/bias no gradient (nondifferentiable): cut
      at functional_1/lambda_1/ArgMax (ArgMax) at train.py:10
      fix: At train.py:10, `tf.argmax` gives integer indices, ...

Each variable is also a ``none`` finding of the Monitor (``monitor.findings``, the timeline),
worded as ``gradscope run`` words its ``unexpected-none`` problem (``analysis/run.py``).
Pure: the causes come in as data (``watcher/analyse.Recorded``, each with its
:class:`~gradscope._src.results.causes.Cause`, which the fix is built from).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from gradscope._src.printable import printable
from gradscope._src.results.causes import Cause
from gradscope._src.results.status import decide
from gradscope._src.timeline.findings import none_fix

#: The variables one line names before it says how many more.
NAMED = 6


def findings(site: str, step: int, nones: Sequence[str],
             causes: Mapping[str, Any]) -> list[dict[str, Any]]:  # fmt: skip
    """A ``none`` finding per variable the failing step got no gradient for, at ``step``:
    ``message`` as ``gradscope run`` words it, with the cut points and the fix."""
    out = []
    for name in nones:
        status, why, cuts, cause = _cause(causes.get(name))
        finding: dict[str, Any] = {
            "kind": "none", "site": site, "variable": name, "from_step": int(step),
            "message": _sentence(site, name, status, why),
        }  # fmt: skip
        if cuts:
            finding["cut_points"] = [dict(c) for c in cuts]
        fix = none_fix(site, name, status, cause, cuts)
        if fix is not None:
            finding["fix"] = fix.to_dict()
        out.append(finding)
    return out


def _cause(recorded: Any) -> tuple[str, str, tuple[Mapping[str, Any], ...], Cause | None]:
    """A recorded cause's status, words, cut points and cause (``none:unexplained`` without
    one)."""
    if recorded is None:
        return str(decide(has_gradient=False)), "", (), None  # nothing known: the rule's
    return (str(recorded.status), str(recorded.why), tuple(recorded.cut_points),
            recorded.cause)  # fmt: skip


def _sentence(site: str, names: str, status: str, why: str) -> str:
    """``fit at train.py:18 gives dense/kernel no gradient (nondifferentiable): cut at ...``."""
    text = f"fit at {site} gives {names} no gradient ({status.removeprefix('none:')})"
    return f"{text}: {why}" if why else text


def message(site: str, error: str, step: int, nones: Sequence[str],
            causes: Mapping[str, Any]) -> str:  # fmt: skip
    """What the Monitor prints: one line for the failure, then one per cause (the variables
    that share it named together) and its fix, each once."""
    groups: dict[tuple[str, str], list[str]] = {}
    fixes: dict[tuple[str, str], str] = {}
    for name in nones:
        status, why, cuts, cause = _cause(causes.get(name))
        groups.setdefault((status, why), []).append(name)
        decided = none_fix(site, name, status, cause, cuts)
        if decided is not None:
            fixes.setdefault((status, why), decided.sentence())
    count = len(nones)
    lines = [
        f"gradscope.keras.Monitor: fit at {site} raised {error} in step {step}, which got no "
        f"gradient for {count} of its variable{'s' if count != 1 else ''}:"
    ]
    shown: set[str] = set()
    for (status, why), names in groups.items():
        listed = ", ".join(names[:NAMED])
        if len(names) > NAMED:
            listed += f" and {len(names) - NAMED} more"
        lines.append(f"  {_sentence(site, listed, status, why)}")
        fix = fixes.get((status, why))
        if fix and fix not in shown:
            shown.add(fix)
            lines.append(f"  fix: {fix}")
    return "\n".join(printable(line) for line in lines)


#: The findings that may explain a step that raised for want of a number (a NaN check).
BEFORE = ("nan", "exploding", "none")


def before(site: str, error: str, step: int, found: Sequence[Mapping[str, Any]]) -> str:
    """What the Monitor prints when a step raised with every gradient there (a NaN check,
    ``tf.debugging.check_numerics``): the findings of the steps recorded before it that can
    explain it (NaN, exploding, missing gradients), one a line; "" when there are none."""
    shown = [f for f in found if f.get("kind") in BEFORE and int(f["from_step"]) < step]
    if not shown:
        return ""
    lines = [f"gradscope.keras.Monitor: fit at {site} raised {error} in step {step}; the steps "
             "recorded before it show:"]  # fmt: skip
    lines += [f"  {f['message']}" for f in shown[:NAMED]]
    if len(shown) > NAMED:
        lines.append(f"  and {len(shown) - NAMED} more findings (monitor.findings)")
    return "\n".join(printable(line) for line in lines)
