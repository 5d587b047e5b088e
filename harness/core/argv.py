"""The harness's own command lines (reporting, repro, explore, audit): one parser whose usage
errors are what the README promises of every configuration error, one `ERROR: ...` line on
stderr and exit status 4 (pytest's for a bad command line), never argparse's usage block and
exit 2; and the numeric option types, each refusing what is not finite or out of its range
(`--drift nan` once switched the drift check off silently, `--drift -1` reported every metric).
"""
from __future__ import annotations

import argparse
import math
import os
import re
import sys

from .text import clipped, printable

USAGE_ERROR = 4


MAX_LINE = 1000


def error_line(message: str) -> str:
    """The one line an error prints: `ERROR: <message>` (printable, on one line, at most MAX_LINE
    characters: argparse quotes a value whole, and a value can be 5,000 digits)."""
    return clipped(printable(" ".join(f"ERROR: {message}".split())), MAX_LINE)


class Parser(argparse.ArgumentParser):
    """argparse with the harness's usage errors: one `ERROR:` line, exit 4 (`--help` still exits 0).
    Its subcommands' parsers are of this class too (argparse makes them with type(self))."""

    def error(self, message: str):           # argparse: must not return
        print(error_line(f"{self.prog}: {message}"), file=sys.stderr)
        sys.exit(USAGE_ERROR)


CLOSED_PIPE = 141            # 128 + SIGPIPE: what a shell tool exits with when its reader has gone


def run(main, argv=None):
    """sys.exit(main(argv)) of a command line, except that a reader that stopped reading
    (`gate RUN BASELINE | head -3`) ends the command quietly with CLOSED_PIPE, as a shell tool does,
    instead of a BrokenPipeError traceback from its next print or the interpreter's last flush."""
    try:
        code = main() if argv is None else main(argv)
        sys.stdout.flush()
    except BrokenPipeError:
        # Python ignores SIGPIPE; nothing more may reach the closed pipe, the final flush included
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        code = CLOSED_PIPE
    sys.exit(code)


def fail(message: str) -> int:
    """Print a validation error found after parsing (a message naming its option, file or field)
    as one `ERROR:` line on stderr; the exit status to return (4)."""
    print(error_line(message), file=sys.stderr)
    return USAGE_ERROR


# A number on a command line is written as every other tool reads it: ASCII decimal. Python's
# int() and float() also take `1_000`, Arabic-Indic or full-width digits (`١٢`, `１２`) and
# surrounding spaces, which a shell script, C's strtol or another harness reads differently or not at
# all (the case files refuse such forms for the same reason: harness/model/readings.py); an integer
# is plain decimal (no leading zero: `010` is 8 to strtol(..., 0) and to YAML 1.1) and fits int64
# (a bigger one is a typo, and SQLite, numpy and C take no more). nan and inf are words float()
# reads: they pass here and are refused as not finite, with the option's own wording.
_INTEGER = re.compile(r"[-+]?(?:0|[1-9][0-9]*)\Z")
_FLOAT = re.compile(r"[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?\Z")
_NOT_FINITE = re.compile(r"[-+]?(?:inf|infinity|nan)\Z", re.IGNORECASE)
INT64_MAX = (1 << 63) - 1


def decimal(text: str, integer: bool = False) -> int | float:
    """`text` as an int (integer=True: plain decimal, within int64) or a float (ASCII decimal, with
    an exponent if need be; nan and inf included, for the caller to refuse by name); ValueError
    for any other form."""
    text = str(text)
    if integer:
        if not _INTEGER.match(text) or not -INT64_MAX - 1 <= int(text) <= INT64_MAX:
            raise ValueError(text)
        return int(text)
    if not (_FLOAT.match(text) or _NOT_FINITE.match(text)):
        raise ValueError(text)
    return float(text)


def plain_int(text: str) -> int:
    """argparse's type=int, ASCII decimal only (decimal()); still `invalid int value: 'x'` in its message."""
    return decimal(text, integer=True)


plain_int.__name__ = "int"


def _number(kind, text: str, what: str):
    try:
        value = decimal(text, integer=kind is int)
    except (TypeError, ValueError):
        raise argparse.ArgumentTypeError(f"{what}, got {text!r}") from None
    if isinstance(value, float) and not math.isfinite(value):
        raise argparse.ArgumentTypeError(f"{what}, got {text!r}")
    return value


def number(*, minimum: float | None = None, above: float | None = None, maximum: float | None = None,
           integer: bool = False):
    """An argparse type: a finite number (an integer with integer=True) >= minimum, > above and
    <= maximum (each where given). Its error names the range and the value given."""
    parts = []
    if minimum is not None:
        parts.append(f">= {minimum:g}")
    if above is not None:
        parts.append(f"> {above:g}")
    if maximum is not None:
        parts.append(f"<= {maximum:g}")
    what = ("an integer" if integer else "a finite number") + (" " + " and ".join(parts) if parts else "")

    def convert(text: str):
        value = _number(int if integer else float, text, f"must be {what}")
        if ((minimum is not None and value < minimum) or (above is not None and value <= above)
                or (maximum is not None and value > maximum)):
            raise argparse.ArgumentTypeError(f"must be {what}, got {text!r}")
        return value

    convert.__name__ = "integer" if integer else "number"      # argparse names the type in some messages
    return convert
