"""A case worker's two log files, as its supervisor reads them.

* The library log is the worker's fd 1 and 2: what the library under test prints. The worker
  measures it through a descriptor of its own (child.py), so a library that closes or replaces its
  fd 2 cannot shift where a case's output starts, and no line the harness printed is ever taken
  for the library's.
* The harness log takes the worker's Python-level output and the stacks faulthandler dumps (on a
  fatal signal, and on SIGUSR1 when a case passes its deadline), written through a descriptor the
  library does not know.

Either may be huge (a library that writes a gigabyte line before it crashes): only a bounded tail
is ever read into memory.
"""
from __future__ import annotations

import os
import re
from pathlib import Path

TAIL_BYTES = 64 * 1024           # of a case's library output, kept for its record
STACK_BYTES = 256 * 1024         # of the harness log, where the stacks are

_STACK_STARTS = ("Fatal Python error", "Current thread 0x", "Thread 0x")


def size(path: Path | None) -> int:
    try:
        return os.stat(path).st_size if path is not None else 0
    except OSError:
        return 0


def tail(path: Path | None, offset: int = 0, limit: int = TAIL_BYTES) -> str:
    """What `path` holds from byte `offset` on, at most its last `limit` bytes (then marked cut)."""
    if path is None:
        return ""
    try:
        with open(path, "rb") as f:
            end = f.seek(0, os.SEEK_END)
            start = max(offset, end - limit)
            f.seek(start)
            data = f.read(limit)
    except OSError:
        return ""
    text = data.decode("utf-8", errors="replace")
    return (f"[... {start - offset} earlier bytes not read ...]" + text) if start > offset else text


def stacks(text: str) -> str:
    """The stacks faulthandler dumped into a harness log (from its first dump on)."""
    lines = text.splitlines()
    for i, line in enumerate(lines):
        if line.startswith(_STACK_STARTS):
            return "\n".join(lines[i:])
    return ""


def last_message(printed: str) -> str:
    """The library's last non-empty line (cut to 1,000 characters)."""
    lines = [ln.strip() for ln in printed.splitlines() if ln.strip()]
    return lines[-1][-1000:] if lines else ""


# glibc's allocator aborts with one of these when it finds its heap damaged (malloc/malloc.c's
# malloc_printerr messages, and "Fatal glibc error: malloc assertion failure ..." for its assertions)
HEAP_CORRUPTION = re.compile(
    r"\b(?:free|malloc|realloc|calloc|munmap_chunk|malloc_consolidate|_int_free|_int_malloc|_int_realloc"
    r"|tcache_thread_shutdown)\(\): .*\b(?:invalid|corrupt|unaligned|double free|mismatch|too many)"
    r"|double free or corruption|\bcorrupted (?:size|double-linked|top|unsorted|fastbin)"
    r"|Fatal glibc error: malloc")


def heap_corruption(printed: str) -> str | None:
    """The line of a worker's output where glibc says its heap is damaged, or None."""
    for line in reversed(printed.splitlines()):
        if HEAP_CORRUPTION.search(line):
            return line.strip()[-300:]
    return None
