"""Errors the harness reports to users in one line (never a traceback)."""
from __future__ import annotations

from .text import clipped, printable

# A case file can put anything into a message (a group name that is a 10 MB list, a key
# with newlines, an escape sequence): each part is cut to a bounded length and kept on one
# printable line.
_LIMITS = {"path": 300, "group": 80, "field": 160, "message": 400}


def _one_line(text: str, limit: int) -> str:
    return clipped(printable(" ".join(str(text).split())), limit)


class CaseFileError(Exception):
    """A case file is malformed. str() is one line naming the file, group and field,
    at most about a thousand characters long."""

    def __init__(self, path, message: str, group: str | None = None, field: str | None = None):
        self.path = _one_line(path, _LIMITS["path"])
        self.message = _one_line(message, _LIMITS["message"])
        self.group = None if group is None else _one_line(group, _LIMITS["group"])
        self.field = None if field is None else _one_line(field, _LIMITS["field"])
        where = [self.path]
        if self.group is not None:
            where.append(f"group {self.group!r}")
        if self.field is not None:
            where.append(f"field {self.field!r}")
        super().__init__(f"{': '.join(where)}: {self.message}")


class HarnessConfigError(Exception):
    """Bad command-line option or environment (unknown backend, SoC, missing library)."""
