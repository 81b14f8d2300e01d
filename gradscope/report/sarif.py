"""SARIF 2.1.0 for code-scanning views (GitHub code scanning, VS Code's SARIF viewer).

One run for the whole check. ``tool.driver.rules`` has one rule per problem kind, always all
four in the same order, each with a description and help text. Each problem is one result:
``ruleId`` its kind, ``level`` ``error`` (a problem the baseline holds is ``note``, with
``baselineState`` ``unchanged``; new ones are ``new`` when a baseline was given), the message,
and a physical location at the spec line the problem points at (the ``expect`` pattern it
contradicts, or the variable's line). URIs are relative to the source root (``--source-root``;
by default the git repository around the current directory, else the current directory), with
forward slashes, against ``%SRCROOT%``, which ``originalUriBaseIds`` maps to the root's
absolute ``file:`` URI: run from a subfolder, an alert still lands on the repository's file.
``partialFingerprints`` identify a problem by spec, loss, variable and kind, so alerts survive
edits around them.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path, PurePath
from typing import Any
from urllib.parse import quote

from gradscope.analysis.baseline import key_of
from gradscope.analysis.check import CheckResult
from gradscope.report import style
from gradscope.report.json import dumps
from gradscope.results import report as m
from gradscope.version import __version__

SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"
VERSION = "2.1.0"

#: Every rule's help ends with where the fix is: in each result (``analysis/fixes.py``).
FIX_HELP = (
    "Each result's message ends with the fix for the pattern gradscope found, at the line to "
    "change (also its related location); where the evidence does not single out one fix, it "
    "lists the candidates."
)

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
    m.REPLICA_MISMATCH: (
        "ReplicasDisagree",
        "Replicas disagree on a gradient's status (--strategy).",
        "Each replica computes the loss on its share of the batch; here one replica's gradient "
        "is usable and another's is zero, NaN or None: the data takes different paths (a "
        "mask, a branch), the failure PyTorch DDP reports as unused parameters. The message "
        "names the replicas.",
    ),
    m.REPLICA_LOSS_SCALE: (
        "LossNotScaledByGlobalBatch",
        "The all-reduced gradient is N times the whole batch's (--strategy).",
        "apply_gradients sums the replicas' gradients, so a loss averaged over each replica's "
        "own examples trains with N times the intended gradient. Divide the per-example loss "
        "by the global batch (tf.nn.compute_average_loss).",
    ),
    m.REPLICA_GRADIENT_DIFFERS: (
        "AllReducedGradientDiffers",
        "The all-reduced gradient is no multiple of the whole batch's (--strategy).",
        "Splitting the batch changes the gradient: the loss is not a sum over examples (a mean "
        "over unevenly split shares, batch statistics, a reduction across the batch axis).",
    ),
    m.REPLICA_VARIABLES_DIFFER: (
        "ReplicaCopiesDiffer",
        "Replicas' copies of a variable differ after a step (--strategy).",
        "Every replica applies the same all-reduced update, so copies stay equal unless they "
        "are written per replica (an assign of per-replica data); then the replicas train "
        "different models.",
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


def source_root(start: str | None = None) -> str:
    """The default source root: the nearest folder from ``start`` (the current directory) up
    that holds ``.git`` (a folder, or a file in a worktree), else ``start`` itself."""
    here = Path(start or os.getcwd()).resolve()
    for folder in (here, *here.parents):
        if (folder / ".git").exists():
            return str(folder)
    return str(here)


def uri(spec: str, root: str | None = None) -> str:
    """A spec path as a SARIF URI: relative to ``root`` (default: the current directory),
    forward slashes, quoted; an absolute ``file:`` URI when the spec lies outside the root.

    Example:
        >>> uri("./configs/my spec.yaml")
        'configs/my%20spec.yaml'
    """
    path = Path(spec).resolve()  # both sides resolved: a symlinked checkout still matches
    try:
        relative = PurePath(os.path.relpath(path, Path(root or os.getcwd()).resolve()))
    except ValueError:  # another drive on Windows
        return path.resolve().as_uri()
    if relative.parts and relative.parts[0] == "..":  # outside the source root: absolute
        return path.resolve().as_uri()
    return quote(relative.as_posix(), safe="/")


def artifact(spec: str, root: str | None = None) -> dict[str, str]:
    """A SARIF artifactLocation: relative to ``%SRCROOT%``, or an absolute ``file:`` URI."""
    found = uri(spec, root)
    return {"uri": found} if found.startswith("file:") else {"uri": found, "uriBaseId": "%SRCROOT%"}


def base_ids(root: str) -> dict[str, Any]:
    """``originalUriBaseIds``: ``%SRCROOT%`` as the root's absolute ``file:`` URI."""
    return {"%SRCROOT%": {"uri": Path(root).resolve().as_uri().rstrip("/") + "/",
                          "description": {"text": "The source root (--source-root)."}}}  # fmt: skip


def driver(rules: list[dict[str, Any]]) -> dict[str, Any]:
    """``tool.driver``: gradscope, its version, the rules."""
    return {"name": "gradscope", "version": __version__, "semanticVersion": __version__,
            "rules": rules}  # fmt: skip


def _kinds(result: CheckResult, rules: dict[str, tuple[str, str, str]]) -> list[str]:
    """Every kind of ``rules``, then the timeline kinds the result holds."""
    found = {p.kind for p in result.problems}
    return list(rules) + [k for k in TIMELINE_RULES if k in found]


def _rules(kinds: list[str], rules: dict[str, tuple[str, str, str]]) -> list[dict[str, Any]]:
    out = []
    for kind in kinds:
        name, short, text = rules.get(kind) or TIMELINE_RULES[kind]
        text = f"{text} {FIX_HELP}"
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


def _result(
    p: m.Problem, spec: str, with_baseline: bool, root: str, kinds: list[str]
) -> dict[str, Any]:
    location = {
        "physicalLocation": {
            "artifactLocation": artifact(p.spec, root),
            "region": {"startLine": max(p.line, 1)},
        }
    }
    out: dict[str, Any] = {
        "ruleId": p.kind,
        "ruleIndex": kinds.index(p.kind),
        "level": "note" if p.known else "error",
        "message": {"text": p.message if p.fix is None else f"{p.message} Fix: {p.fix.sentence()}"},
        "locations": [location],
        "partialFingerprints": {"gradscopeProblem/v1": _fingerprint(p, spec)},
        "properties": {
            "loss": p.loss,
            "variable": p.variable,
            "cutPoints": [c.to_dict() for c in p.cut_points],
            "fix": None if p.fix is None else p.fix.to_dict(),
        },
    }
    fix_at = _fix_location(p, root)
    if fix_at is not None:
        out["relatedLocations"] = [fix_at]
    if with_baseline:
        out["baselineState"] = "unchanged" if p.known else "new"
    return out


def _fix_location(p: m.Problem, root: str) -> dict[str, Any] | None:
    """The line the fix changes, when it names one (a related location, labelled)."""
    path, _, line = p.fix.where.rpartition(":") if p.fix is not None else ("", "", "")
    if p.fix is None or not path or not line.isdigit():
        return None
    return {
        "id": 0,
        "physicalLocation": {"artifactLocation": artifact(path, root),
                             "region": {"startLine": max(int(line), 1)}},
        "message": {"text": f"fix ({p.fix.kind}) here"},
    }  # fmt: skip


def _fingerprint(p: m.Problem, spec: str) -> str:
    text = "\0".join(str(part) for part in key_of(p, spec))
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:32]


def to_sarif(
    result: CheckResult,
    root: str | None = None,
    *,
    rules: dict[str, tuple[str, str, str]] | None = None,
    automation: str = "gradscope/check/",
) -> dict[str, Any]:
    """The SARIF log as a dictionary; URIs relative to ``root`` (default: ``source_root()``).

    Args:
        result: the check (or a run drawn as one, ``report/run_sarif.py``).
        root: the source root.
        rules: kind -> (name, short description, help): the rules, in order (default
            ``RULES``, check's).
        automation: ``automationDetails.id``, which tells code scanning the analyses apart.
    """
    root = root or source_root()
    rules = RULES if rules is None else rules
    first = result.reports[0] if result.reports else None
    kinds = _kinds(result, rules)
    run: dict[str, Any] = {
        "tool": {"driver": driver(_rules(kinds, rules))},
        "automationDetails": {"id": automation},
        "columnKind": "unicodeCodePoints",
        "originalUriBaseIds": base_ids(root),
        "invocations": [
            {
                "executionSuccessful": True,
                "exitCode": int(result.exit_code),
                # every note in every format: SARIF's place for what a tool wants read
                "toolExecutionNotifications": _notifications(result),
            }
        ],
        "artifacts": [{"location": artifact(r.spec, root)} for r in result.reports],
        "results": [
            _result(p, r.spec, result.baseline is not None, root, kinds)
            for r in result.reports
            for p in r.problems
        ],
        "properties": {"tensorflow": first.tensorflow if first else None},
    }
    return {"$schema": SCHEMA, "version": VERSION, "runs": [run]}


def _notifications(result: CheckResult) -> list[dict[str, Any]]:
    return [
        {
            "level": "note",
            "message": {"text": f"{r.spec}: {f'{loss}: ' if loss else ''}{note}"},
        }
        for r in result.reports
        for loss, note in style.note_rows(r)
    ]


def render(
    result: CheckResult, *, color: bool = False, width: int = 120, source_root: str | None = None
) -> str:
    """The check result as a SARIF 2.1.0 log (JSON), URIs relative to ``source_root``."""
    return dumps(to_sarif(result, source_root))
