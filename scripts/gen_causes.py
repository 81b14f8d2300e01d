"""Regenerate what is made from the registry of causes (``gradscope/_src/results/causes.py``):
docs/reference/causes-and-fixes.md and the fix kinds the JSON schemas list.

The page: each cause that has a proven case in tests/cases/fixes/ (its title and help from the
registry; per case, from its ``case.yaml``, what goes wrong there, the broken example, what
gradscope prints for it, the fix in words and the fixed example), then every cause of the
registry in a table (id, status, SARIF rule, fix kinds). Every example on the page is a file
``tests/analysis/test_fixes_proven.py`` runs: bare TensorFlow gives the broken one no (or a
NaN) gradient and the fixed one a finite one with the same forward values, and gradscope names
the fix's kind and line. What gradscope prints is produced by running it here (``gradscope run
broken.py``, or ``gradscope inspect broken.py:build``, in the case's folder, at 88 columns).

The schemas: the ``kind`` of ``$defs.fix`` in schema/report-v1.json lists
``causes.fix_kinds()``; ``scripts/bundle_schemas.py`` copies it into run-v1.json and
check-v1.json.

Usage: ``python scripts/gen_causes.py`` rewrites them; ``--check`` exits 1 when one differs
from what the registry and the cases make (the printed output is not compared: it holds
numbers that vary across machines). ``tests/results/test_causes.py`` runs ``--check``.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from gradscope._src.results import causes  # noqa: E402

CASES = ROOT / "tests" / "cases" / "fixes"
PAGE = ROOT / "docs" / "reference" / "causes-and-fixes.md"
SCHEMA = ROOT / "schema" / "report-v1.json"

HEAD = """# Causes and fixes

<!-- Made by scripts/gen_causes.py from gradscope/_src/results/causes.py and
tests/cases/fixes/: edit those, then run it. -->

Every cause gradscope finds comes with a **fix**: what to change, at your own line. This page
lists them, each with a minimal broken program, what gradscope prints for it, the fix, and
the fixed program. Every example here is a test (`tests/analysis/test_fixes_proven.py`): bare
TensorFlow gives the broken program no gradient (or a NaN) and the fixed one a finite
gradient, the fixed one computes the same values forward (a fix changes how the gradient
flows, not what the program computes), and gradscope names the fix's kind and line.

The fix is in every output: a `fix:` line in the table, a `fix` field in JSON (pairs,
sources, problems, timeline findings; `schema/`), the SARIF result's message and a related
location at the line to change, a GitHub notice on that line, Markdown and JUnit text, and
`.fix` on the Python API's results (`PairResult`, `SourceResult`, and every `Finding`).
Where the evidence does not single out one fix (a NaN whose op is unknown, a dead or
exploding layer over training, a gradient TensorFlow drops for no cause gradscope can see),
the fix says so and lists the candidates. A source's or a pair's cause is in JSON too:
`note` in words, `cause` as its id and facts.
"""

TAIL_HEAD = """## Every cause

Each cause gradscope knows, as the registry holds it: the status it explains, its rule in
SARIF, and the fixes it gives. A cause without a section above has no proven case of its own
yet (a timeline's trends, a distributed run's replicas, notes that explain a status).

| cause | status | SARIF rule | fixes | what it is |
|---|---|---|---|---|
"""


def cases() -> list[tuple[str, dict[str, Any]]]:
    """Every proven case with its ``case.yaml``, in folder order."""
    return [(p.name, yaml.safe_load((p / "case.yaml").read_text()))
            for p in sorted(CASES.iterdir()) if (p / "case.yaml").exists()]  # fmt: skip


def _code(path: Path) -> str:
    return path.read_text().rstrip("\n")


def _printed(case: str) -> str:
    """What gradscope prints for the broken program, run in the case's folder."""
    folder = CASES / case
    if not (folder / "broken.py").exists() or (folder / "broken.yaml").exists():
        target = ["inspect", "--strategy", "mirrored", "broken.yaml"]
    elif "def build" in (folder / "broken.py").read_text():
        target = ["inspect", "broken.py:build"]
    else:
        target = ["run", "--continue", "broken.py"]
    env = dict(os.environ, COLUMNS="88", TF_CPP_MIN_LOG_LEVEL="3", PYTHONWARNINGS="ignore")
    env["PYTHONPATH"] = str(ROOT)
    done = subprocess.run([sys.executable, "-m", "gradscope", *target], cwd=folder, env=env,
                          capture_output=True, text=True, timeout=300, check=False)  # fmt: skip
    # ``run`` writes its report to standard error (the program's own output keeps stdout)
    lines = (done.stdout + done.stderr).splitlines()
    kept = [line for line in lines if not line.startswith(_NOISE)]
    return "\n".join(kept).strip("\n")


#: Lines that are not gradscope's report: its progress, Python's and TensorFlow's warnings.
_NOISE = ("gradscope: ", "  warnings.warn", "WARNING", "E0000", "I0000", "W0000")


def _case(case: str, data: dict[str, Any], printed: str) -> str:
    folder = CASES / case
    broken = folder / ("broken.yaml" if (folder / "broken.yaml").exists() else "broken.py")
    fixed = broken.with_stem("fixed")
    lang = "yaml" if broken.suffix == ".yaml" else "python"
    return (
        f"<!-- case: {case} -->\n{data['about']}\n\n```{lang}\n{_code(broken)}\n```\n\n"
        f"gradscope prints:\n\n```text\n{printed}\n```\n\n"
        f"**Fix.** {data['fixed']}\n\n```{lang}\n{_code(fixed)}\n```\n"
    )


def page(printed: dict[str, str]) -> str:
    """The page, with ``printed[case]`` as what gradscope prints for each case ("" unknown)."""
    by_cause: dict[str, list[tuple[str, dict[str, Any]]]] = {}
    for case, data in cases():
        by_cause.setdefault(data["cause"], []).append((case, data))
    parts = [HEAD]
    for cause_id, cls in causes.CAUSES.items():
        for i, (case, data) in enumerate(by_cause.get(cause_id, [])):
            head = f"## {cls.title}\n\n{cls.help}\n\n" if i == 0 else ""
            parts.append(head + _case(case, data, printed.get(case, "")))
    rows = []
    for cls in causes.CAUSES.values():
        title = cls.title.replace("|", r"\|")
        fixes = ", ".join(f"`{k}`" for k in cls.fixes)
        rows.append(f"| `{cls.id}` | `{cls.status}` | {cls.rule} | {fixes} | {title} |")
    parts.append(TAIL_HEAD + "\n".join(rows) + "\n")
    return "\n".join(parts)


#: What gradscope printed, on the page: left out when pages are compared.
_PRINTED = re.compile(r"(gradscope prints:\n\n```text\n).*?(\n```)", re.DOTALL)


def _without_printed(text: str) -> str:
    return _PRINTED.sub(r"\1\2", text)


def _kept() -> dict[str, str]:
    """What the page holds as printed for each case (``--keep-printed``)."""
    text = PAGE.read_text() if PAGE.exists() else ""
    out = {}
    for part in text.split("<!-- case: ")[1:]:
        case, _, rest = part.partition(" -->")
        found = _PRINTED.search(rest)
        out[case] = found.group(0)[len("gradscope prints:\n\n```text\n") : -len("\n```")] if (
            found) else ""  # fmt: skip
    return out


def fix_kinds_description() -> str:
    return f"Which fix: {', '.join(causes.fix_kinds())} (new kinds may be added)."


def schema_text(text: str) -> str:
    """report-v1.json's text with ``$defs.fix.properties.kind`` listing the registry's."""
    data = json.loads(text)
    old = data["$defs"]["fix"]["properties"]["kind"]["description"]
    return text.replace(json.dumps(old, ensure_ascii=False)[1:-1], fix_kinds_description(), 1)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true")
    parser.add_argument(
        "--keep-printed",
        action="store_true",
        help="keep what the page holds as printed (no gradscope runs)",
    )
    args = parser.parse_args()
    for case, data in cases():  # a case names a cause of the registry and one of its fixes
        cls = causes.CAUSES.get(data.get("cause", ""))
        if cls is None or data["fix"] not in cls.fixes:
            print(f"{CASES / case / 'case.yaml'}: cause {data.get('cause')!r} gives no fix "
                  f"{data['fix']!r}")  # fmt: skip
            return 1
    schema = SCHEMA.read_text(encoding="utf-8")
    if args.check:
        stale = []
        if schema_text(schema) != schema:
            stale.append(str(SCHEMA))
        found = PAGE.read_text() if PAGE.exists() else ""
        if _without_printed(page({})) != _without_printed(found):
            stale.append(str(PAGE))
        bundle = [sys.executable, str(ROOT / "scripts" / "bundle_schemas.py"), "--check"]
        bundled = subprocess.run(bundle, capture_output=True, text=True, check=False)
        if stale or bundled.returncode:
            print(f"not made from the registry: {', '.join(stale) or bundled.stdout.strip()} "
                  f"(run python {Path(__file__).relative_to(ROOT)})")  # fmt: skip
            return 1
        return 0
    SCHEMA.write_text(schema_text(schema), encoding="utf-8")
    subprocess.run([sys.executable, str(ROOT / "scripts" / "bundle_schemas.py")], check=True)
    kept = _kept() if args.keep_printed else {}
    printed = {case: kept[case] if case in kept else _printed(case) for case, _ in cases()}
    PAGE.parent.mkdir(parents=True, exist_ok=True)
    PAGE.write_text(page(printed))
    print(f"wrote {PAGE} and the schemas' fix kinds")
    return 0


if __name__ == "__main__":
    sys.exit(main())
