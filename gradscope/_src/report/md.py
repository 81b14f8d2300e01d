"""Text for GitHub's Markdown (GFM): names as code spans, prose with its code spans kept.

GitHub reads ``expect.<loss>.none`` as an HTML tag (it shows ``expect..none``) and a ``|`` in
a name as a new table cell. ``code`` makes any name a code span (a longer fence when the name
holds backticks); ``prose`` escapes what Markdown would act on outside the message's own
code spans; in a table cell a ``|`` becomes ``\\|`` everywhere, code spans included, which
is how GFM keeps it in the cell; ``html`` is for text inside raw HTML (``<summary>``).
"""

from __future__ import annotations

import html as _html
import re

#: Characters Markdown acts on inside running text (a backslash escapes any ASCII punctuation);
#: prose never starts a line, so ``#``, ``+``, ``-`` and ``1.`` need nothing, and an ``_``
#: inside a word (``head1_frozen``) emphasizes nothing in GFM.
_SPECIAL = re.compile(r"([\\`*\[\]<>|~&]|(?<![0-9A-Za-z])_|_(?![0-9A-Za-z]))")
#: A code span as gradscope's messages write them: `name`.
_SPAN = re.compile(r"(`[^`\n]+`)")


def code(text: str, *, table: bool = False) -> str:
    """``text`` as one inline code span, whatever it holds.

    Example:
        >>> code("a|b", table=True), code("w`1")
        ('`a\\\\|b`', '`` w`1 ``')
    """
    text = " ".join(text.split())
    runs = [len(r) for r in re.findall(r"`+", text)]
    fence = "`" * (max(runs, default=0) + 1)
    pad = " " if runs or text.startswith(" ") else ""
    span = f"{fence}{pad}{text}{pad}{fence}"
    return span.replace("|", "\\|") if table else span


def prose(text: str, *, table: bool = False) -> str:
    """A message for a list item or a table cell: its `code spans` kept, everything else
    escaped, one line.

    Example:
        >>> prose("list it under expect.<loss>.none (`task2/*`)")
        'list it under expect.\\\\<loss\\\\>.none (`task2/*`)'
    """
    parts = _SPAN.split(" ".join(text.split()))
    out = []
    for i, part in enumerate(parts):
        if i % 2:  # a code span
            out.append(part.replace("|", "\\|") if table else part)
        else:
            out.append(_SPECIAL.sub(r"\\\1", part))
    return "".join(out)


def html(text: str) -> str:
    """Text inside raw HTML (``<summary>``): entities, one line."""
    return _html.escape(" ".join(text.split()), quote=False)
