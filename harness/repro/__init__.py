"""Standalone reproducers: for any case, a directory a library vendor builds and runs with one
command against their CANN, without the harness (`python -m harness.repro c CASE_ID -o DIR`).

`write_c_repro(case, args, golden, directory, family)` is the entry point for callers that already
hold a case's argument list and golden (the case worker, for a failing case)."""
from .commands import BUILD_COMMAND, RUN_COMMAND
from .writer import write_c_repro

__all__ = ["BUILD_COMMAND", "RUN_COMMAND", "write_c_repro"]
