"""Free text made safe to show: every character a reader cannot see, or a format cannot hold,
written as a Python-style escape.

Reasons, notes and descriptions reach the reports from case files and from the library under
test (its error messages). A control character there is invisible in summary.md, cannot be held
by junit.xml at all (XML 1.0 allows no C0 control but tab, line feed and carriage return), is a
parse error in report.html, and an ESC sequence on a terminal line repaints the terminal. A
bidirectional override (U+202E) or a zero-width character makes two different texts look the
same. Every writer passes its text through printable() once, so what is shown is what was there.
"""
from __future__ import annotations

from typing import NamedTuple

# Line breaks a multi-line field keeps (a JUnit failure body, a <pre>); everywhere else they are
# shown as escapes too, so that one record stays one line.
_LINE_BREAKS = "\n\t"


def _escape(ch: str) -> str:
    code = ord(ch)
    if code < 0x100:
        return f"\\x{code:02x}"
    return f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}"


def clipped(text: str, limit: int) -> str:
    """`text` cut to at most `limit` characters, "..." saying where (a message can quote a value
    of megabytes)."""
    return text if len(text) <= limit else text[:limit - 3] + "..."


def say(lines) -> None:
    """Print lines that carry case ids, reasons and messages, each as one printable line (the
    command lines' output)."""
    for line in lines:
        print(printable(line))


def printable(text, lines: bool = False) -> str:
    """`text` (made a str) with every non-printable character escaped: C0 and C1 controls, DEL,
    format characters (bidi overrides, zero-width space), line and paragraph separators, unassigned
    and private-use code points, lone surrogates and non-breaking spaces (str.isprintable's
    definition; the plain space is kept). With lines=True, line feed and tab are kept as they are."""
    text = text if isinstance(text, str) else str(text)
    if text.isprintable():          # the common case, at C speed
        return text
    keep = _LINE_BREAKS if lines else ""
    return "".join(ch if ch.isprintable() or ch in keep else _escape(ch) for ch in text)


class Spelling(NamedTuple):
    """The words a value is written with in a one-token name: a case id says NULL, 1/0 and - (short,
    and stable since ids are repro selectors), a triage atom null, true/false and [] (read by people)."""
    null: str
    true: str
    false: str
    empty: str


def spelled(value, words: Spelling) -> str:
    """An attribute value as one token; a list's items joined by "x" (kernel 3x3)."""
    if value is None:
        return words.null
    if isinstance(value, bool):
        return words.true if value else words.false
    if isinstance(value, (list, tuple)):
        return "x".join(spelled(v, words) for v in value) if value else words.empty
    return str(value)
