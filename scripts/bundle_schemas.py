"""Make schema/run-v1.json and schema/check-v1.json stand alone (plain ``jsonschema.validate``).

    python scripts/bundle_schemas.py          # rewrite them
    python scripts/bundle_schemas.py --check  # exit 1 when they are not up to date

It then copies every schema/*.json into the package (``gradscope/_src/data/schema/``), where
``gradscope schema NAME`` reads it: an installed gradscope prints the very files of schema/.

Write ``"$ref": "report-v1.json#/$defs/NAME"`` in run-v1.json as you like: this script turns
it into ``"#/$defs/NAME"`` and copies report-v1.json's definition of NAME (and of what it refers
to) to the end of run-v1.json's ``$defs``, one line each. check-v1.json gets every definition of
report-v1.json and its body (``$defs.report``). The one place to change a shared definition
stays report-v1.json; ``tests/test_schemas.py`` runs ``--check``.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path
from typing import Any

SCHEMAS = Path(__file__).resolve().parents[1] / "schema"
#: The package's copies (``gradscope schema`` prints them).
PACKAGED = Path(__file__).resolve().parents[1] / "gradscope" / "_src" / "data" / "schema"
#: run-v1.json's own definitions; any other of its definitions is a copy from report-v1.json.
RUN_OWN = ("call", "problem", "source", "via")
_REF = re.compile(r'"#/\$defs/(\w+)"')


def _needed(text: str, report: dict[str, Any]) -> list[str]:
    """The report definitions ``text`` refers to, with what they refer to, sorted."""
    names = {n for n in _REF.findall(text) if n not in RUN_OWN}
    while True:
        more = {n for name in names for n in _REF.findall(json.dumps(report["$defs"][name]))}
        if more <= names:
            return sorted(names)
        names |= more


def _local_id(text: str) -> str:
    """An ``$id`` at a URL (no server holds these files) becomes the file's own name."""
    return re.sub(r'"\$id": "[a-z]+://[^"]*/([\w.-]+)"', r'"$id": "\1"', text, count=1)


def bundled_run(text: str, report: dict[str, Any]) -> str:
    """run-v1.json's text with its refs local and report-v1's definitions copied in."""
    text = _local_id(text).replace('"report-v1.json#/$defs/', '"#/$defs/')
    copies = re.compile(r'^    "(\w+)": \{.*\},?\n', re.MULTILINE)  # a copied definition's line
    top, marker, defs = text.partition('\n  "$defs": {\n')
    if not marker:
        raise SystemExit("run-v1.json has no $defs block")
    defs = copies.sub(lambda m: "" if m.group(1) not in RUN_OWN else m.group(0), defs)
    text = top + marker + defs
    text = re.sub(r",\n  \}\n\}\n$", "\n  }\n}\n", text)  # the comma a removed last line left
    if not text.endswith("\n  }\n}\n"):
        raise SystemExit("run-v1.json must end with its $defs block")
    lines = "".join(
        f',\n    "{name}": {json.dumps(report["$defs"][name], ensure_ascii=False)}'
        for name in _needed(text, report)
    )
    bundled = text[: -len("\n  }\n}\n")] + lines + "\n  }\n}\n"
    json.loads(bundled)
    return bundled


def bundled_check(text: str, report: dict[str, Any]) -> str:
    """check-v1.json's text with report-v1's definitions and body as its ``$defs``."""
    text = _local_id(text).replace('"$ref": "report-v1.json#/$defs/', '"$ref": "#/$defs/')
    text = text.replace('"$ref": "report-v1.json"', '"$ref": "#/$defs/report"')
    head = text.split(',\n  "$defs": ', 1)[0].rstrip()
    if head.endswith("\n}"):  # no $defs yet: the file's closing brace
        head = head[: -len("\n}")]
    defs = dict(report["$defs"])
    defs["report"] = {k: v for k, v in report.items() if k not in ("$schema", "$id", "$defs")}
    body = json.dumps(defs, indent=2, ensure_ascii=False).replace("\n", "\n  ")
    bundled = head + ',\n  "$defs": ' + body + "\n}\n"
    json.loads(bundled)
    return bundled


def main(argv: list[str]) -> int:
    report = json.loads((SCHEMAS / "report-v1.json").read_text(encoding="utf-8"))
    stale = []
    for name, bundle in (("run-v1.json", bundled_run), ("check-v1.json", bundled_check)):
        path = SCHEMAS / name
        text = path.read_text(encoding="utf-8")
        new = bundle(text, report)
        if new != text:
            stale.append(name)
            if "--check" not in argv:
                path.write_text(new, encoding="utf-8")
    for path in sorted(SCHEMAS.glob("*.json")):
        copy = PACKAGED / path.name
        text = path.read_text(encoding="utf-8")
        if not copy.is_file() or copy.read_text(encoding="utf-8") != text:
            stale.append(f"gradscope/_src/data/schema/{path.name}")
            if "--check" not in argv:
                PACKAGED.mkdir(parents=True, exist_ok=True)
                copy.write_text(text, encoding="utf-8")
    extra = sorted(p.name for p in PACKAGED.glob("*.json") if not (SCHEMAS / p.name).is_file())
    if extra:
        stale += [f"gradscope/_src/data/schema/{name} (not in schema/)" for name in extra]
    if stale and "--check" in argv:
        print(f"not bundled: {', '.join(stale)} (run python scripts/bundle_schemas.py)")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
