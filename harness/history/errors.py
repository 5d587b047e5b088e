"""What can go wrong with the results store, each said in one line."""
from __future__ import annotations

from ..core.errors import HarnessConfigError


class HistoryError(HarnessConfigError):
    """A bad --db URL or a store this code cannot use; str() is one line."""


class StoreUnreachable(HistoryError):
    """The database could not be opened or written (refused, no such host, a read-only file)."""


class StoreTooNew(HistoryError):
    """The store's schema is newer than this harness's migrations."""
