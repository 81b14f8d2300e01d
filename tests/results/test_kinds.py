"""The registry of finding kinds (``results/kinds.py``): one entry, one meaning, per kind,
and the SARIF rules of every command are its words."""

from __future__ import annotations

import json
import re

from gradscope._src.analysis.check import check_reports
from gradscope._src.report import render
from gradscope._src.results import kinds
from gradscope._src.results.status import PROBLEM_KINDS, FindingKind, ProblemKind
from tests import checks


def test_kinds_every_kind_has_one_entry() -> None:
    assert ProblemKind is FindingKind  # one kind enum, under both of its names
    assert list(kinds.KINDS)[: len(PROBLEM_KINDS)] == list(map(str, PROBLEM_KINDS))
    assert set(kinds.KINDS) == set(map(str, FindingKind))
    for kind in kinds.KINDS.values():
        assert kind.rule and kind.short.endswith(".") and kind.help.endswith(".")
    assert len({k.rule for k in kinds.KINDS.values()}) == len(kinds.KINDS)
    # every run kind is a check kind, but the optimizer's move on JAX (a target runs none) and
    # a gradient zero by construction (a tf.sign on every path: run's own pass, so far)
    only_run = {str(ProblemKind.MOVED_WITHOUT_GRADIENT), str(ProblemKind.ALWAYS_ZERO)}
    assert set(kinds.RUN) - set(kinds.CHECK) == only_run
    assert set(kinds.TIMELINE) == set(map(str, FindingKind)) - set(map(str, PROBLEM_KINDS)) - (
        only_run
    )


def test_kinds_words_fit_every_door() -> None:
    """One meaning for spec, target and run: no rule speaks of a spec alone."""
    for kind in kinds.KINDS.values():
        assert not re.search(r"\bspecs?\b", f"{kind.short} {kind.help}")


def test_sarif_rules_are_the_registrys() -> None:
    log = json.loads(render(checks.result(), "sarif"))
    rules = log["runs"][0]["tool"]["driver"]["rules"]
    for rule in rules:
        kind = kinds.kind(rule["id"])
        assert rule["name"] == kind.rule
        assert rule["shortDescription"]["text"] == kind.short
        assert rule["help"]["text"].startswith(kind.help)


def test_sarif_lists_a_timeline_kind_the_result_holds() -> None:
    report = checks.every_kind()
    dead = report.problems[0].problem("t.py:3", "w", FindingKind.DEAD, "w: dead", (), "t.py", 3)
    held = check_reports([report.__class__(**{**report.__dict__, "problems": (dead,)})])
    rules = json.loads(render(held, "sarif"))["runs"][0]["tool"]["driver"]["rules"]
    assert [r["id"] for r in rules] == [*kinds.CHECK, "dead"]
