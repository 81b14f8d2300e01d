"""Names with control characters are shown as escapes in every format."""

from __future__ import annotations

from gradscope._src.printable import is_printable, printable
from gradscope._src.report.junit import printable_xml


def test_printable_escapes_line_breaks_and_terminal_controls() -> None:
    assert printable("a\n::error::x") == "a\\n::error::x"
    assert printable("w\x0c\x1b[31m\u2028") == "w\\x0c\\x1b[31m\\u2028"
    assert printable("dense/kernel é") == "dense/kernel é"
    assert not is_printable("a\rb") and is_printable("body/w")


def test_junit_text_never_holds_characters_xml_forbids() -> None:
    assert printable_xml("<a name='x\x0cy'/>") == "<a name='x\\x0cy'/>"
    assert printable_xml("tab\tand\nline") == "tab\tand\nline"
