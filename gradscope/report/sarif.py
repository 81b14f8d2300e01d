"""SARIF 2.1.0 for code-scanning views (GitHub code scanning, VS Code's SARIF viewer).

One run for the whole check. ``tool.driver.rules`` has one rule per problem kind, always all
four in the same order, each with a description and help text. Each problem is one result:
``ruleId`` its kind, ``level`` ``error`` (a problem the baseline holds is ``note``, with
``baselineState`` ``unchanged``; new ones are ``new`` when a baseline was given), the message,
and a physical location at the spec line the problem points at (the ``expect`` pattern it
contradicts, or the variable's line). URIs are relative to the current directory (the
repository root in CI), with forward slashes, against ``%SRCROOT%``. ``partialFingerprints``
identify a problem by spec, loss, variable and kind, so alerts survive edits around them.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path, PurePath
from typing import Any
from urllib.parse import quote

from gradscope import __version__
from gradscope.analysis import model as m
from gradscope.analysis.baseline import key_of
from gradscope.analysis.check import CheckResult
from gradscope.report.json import dumps

SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"
VERSION = "2.1.0"

#: kind -> (short name, short description, help text).
RULES: dict[str, tuple[str, str, str]] = {
    m.UNEXPECTED_NONE: (
        "UnexpectedNoneGradient",
        "A variable the spec's `expect.<loss>.connected` lists gets no usable gradient.",
        "The loss gives this variable no gradient (or an all-zero one), so training on that "
        "loss never updates it. Look at the cut points: a stop_gradient, an assign, an op "
        "with no gradient (argmax, round, an integer cast), or no path at all. Reconnect the "
        "variable, or move it from `connected` to `none` if that is intended.",
    ),
    m.UNEXPECTED_CONNECTED: (
        "UnexpectedGradient",
        "A variable the spec's `expect.<loss>.none` lists gets a gradient.",
        "The loss reaches a variable its author expected it not to train, so an optimizer "
        "step on that loss changes it. Cut the path (a stop_gradient, a var_list) or remove "
        "the variable from `none`.",
    ),
    m.NAN_PROBLEM: (
        "NonFiniteGradient",
        "A gradient has a NaN or an infinity.",
        "One optimizer step with this gradient turns the variable into NaN. Typical causes: "
        "log or sqrt of zero, a division by zero, an overflowing exp.",
    ),
    m.NEVER_TRAINED: (
        "NeverTrainedVariable",
        "A trainable variable gets a gradient from no loss.",
        "No loss updates this variable, so it keeps its initial value forever. Connect it, "
        "make it non-trainable, or list it under some `expect.<loss>.none` to declare it "
        "unused.",
    ),
    m.NUMERIC_DIFFERS: (
        "GradientDiffersFromFiniteDifferences",
        "A gradient disagrees with central finite differences of its loss (--numeric).",
        "TensorFlow's gradient is not the derivative of the loss: a wrong custom gradient, an "
        "op whose registered gradient is not its derivative, or a deliberate difference (a "
        "straight-through estimator, an assign, a custom gradient) on a variable that "
        "`expect.<loss>.numeric` asks to agree. Compare the analytic and numeric values at "
        "the worst coordinate in the JSON report.",
    ),
}


#: Rules of the kinds only ``check --timeline`` reports (its ``nan`` is the rule above);
#: listed after ``RULES`` when a result holds one.
TIMELINE_RULES: dict[str, tuple[str, str, str]] = {
    "exploding": (
        "ExplodingGradient",
        "A gradient norm jumped far above its running median.",
        "The next optimizer steps overshoot; NaN often follows. Lower the learning "
        "rate or clip gradients.",
    ),
    "dead": (
        "DeadGradient",
        "Most of a gradient is exactly zero for several recorded steps.",
        "The units feeding the variable output 0 for every input (a dying ReLU) or its "
        "path is masked, so it stops training. Lower the learning rate, use LeakyReLU or "
        "GELU, or check the bias initialization.",
    ),
    "vanishing": (
        "VanishingGradient",
        "A gradient is tiny next to its variable's own norm.",
        "The variable barely changes. Look for saturating activations, a missing "
        "normalization or residual connection.",
    ),
    "none": (
        "NoGradient",
        "A variable gets no gradient during training.",
        "TensorFlow returned None: the variable never trains from that step on. "
        "`gradscope run` or `gradscope inspect` names where the path is cut.",
    ),
}


def uri(spec: str) -> str:
    """A spec path as a SARIF URI: relative to the current directory, forward slashes, quoted.

    Example:
        >>> uri("./configs/my spec.yaml")
        'configs/my%20spec.yaml'
    """
    path = Path(spec)
    if path.is_absolute():
        try:
            path = Path(os.path.relpath(path))
        except ValueError:
            return path.as_uri()
    relative = PurePath(os.path.normpath(path))
    if relative.parts and relative.parts[0] == "..":  # outside the source root: absolute
        return Path(spec).resolve().as_uri()
    return quote(relative.as_posix(), safe="/")


def artifact(spec: str) -> dict[str, str]:
    """A SARIF artifactLocation: relative to ``%SRCROOT%``, or an absolute ``file:`` URI."""
    found = uri(spec)
    return {"uri": found} if found.startswith("file:") else {"uri": found, "uriBaseId": "%SRCROOT%"}


def _kinds(result: CheckResult) -> list[str]:
    """Every check kind, then the timeline kinds the result holds."""
    found = {p.kind for p in result.problems}
    return list(RULES) + [k for k in TIMELINE_RULES if k in found]


def _rules(kinds: list[str]) -> list[dict[str, Any]]:
    out = []
    for kind in kinds:
        name, short, text = RULES.get(kind) or TIMELINE_RULES[kind]
        out.append({
            "id": kind,
            "name": name,
            "shortDescription": {"text": short},
            "fullDescription": {"text": f"{short} {text}"},
            "help": {"text": text, "markdown": text},
            "defaultConfiguration": {"level": "error"},
            "properties": {"tags": ["gradients", "tensorflow"], "precision": "very-high"},
        })  # fmt: skip
    return out


def _result(p: m.Problem, spec: str, with_baseline: bool, kinds: list[str]) -> dict[str, Any]:
    location = {
        "physicalLocation": {
            "artifactLocation": artifact(p.spec),
            "region": {"startLine": max(p.line, 1)},
        }
    }
    out: dict[str, Any] = {
        "ruleId": p.kind,
        "ruleIndex": kinds.index(p.kind),
        "level": "note" if p.known else "error",
        "message": {"text": p.message},
        "locations": [location],
        "partialFingerprints": {"gradscopeProblem/v1": _fingerprint(p, spec)},
        "properties": {
            "loss": p.loss,
            "variable": p.variable,
            "cutPoints": [c.to_dict() for c in p.cut_points],
        },
    }
    if with_baseline:
        out["baselineState"] = "unchanged" if p.known else "new"
    return out


def _fingerprint(p: m.Problem, spec: str) -> str:
    text = "\0".join(str(part) for part in key_of(p, spec))
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:32]


def to_sarif(result: CheckResult) -> dict[str, Any]:
    """The SARIF log as a dictionary."""
    first = result.reports[0] if result.reports else None
    kinds = _kinds(result)
    run: dict[str, Any] = {
        "tool": {
            "driver": {
                "name": "gradscope",
                "version": __version__,
                "semanticVersion": __version__,
                "rules": _rules(kinds),
            }
        },
        "automationDetails": {"id": "gradscope/check/"},
        "columnKind": "unicodeCodePoints",
        "invocations": [{"executionSuccessful": True, "exitCode": int(result.exit_code)}],
        "artifacts": [{"location": artifact(r.spec)} for r in result.reports],
        "results": [
            _result(p, r.spec, result.baseline is not None, kinds)
            for r in result.reports
            for p in r.problems
        ],
        "properties": {"tensorflow": first.tensorflow if first else None},
    }
    return {"$schema": SCHEMA, "version": VERSION, "runs": [run]}


def render(result: CheckResult, *, color: bool = False, width: int = 120) -> str:
    """The check result as a SARIF 2.1.0 log (JSON)."""
    return dumps(to_sarif(result))
