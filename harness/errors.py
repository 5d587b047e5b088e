"""Errors the harness reports to users in one line (never a traceback)."""
from __future__ import annotations


class CaseFileError(Exception):
    """A case file is malformed. str() is one line naming the file, group and field."""

    def __init__(self, path, message: str, group: str | None = None, field: str | None = None):
        self.path, self.group, self.field, self.message = str(path), group, field, message
        where = [self.path]
        if group is not None:
            where.append(f"group {group!r}")
        if field is not None:
            where.append(f"field {field!r}")
        super().__init__(f"{': '.join(where)}: {message}")


class HarnessConfigError(Exception):
    """Bad command-line option or environment (unknown backend, SoC, missing library)."""
