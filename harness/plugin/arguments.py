"""The command line's own mistakes, found before the run opens: one `ERROR:` line and exit 4 with
or without -q and -n, and no report directory touched.

* An option given an empty value: in a CI script that is an unset variable (`--shard "$SHARD"`),
  and read as "not given" it silently ran everything, or gated nothing.
* A case path or node id that does not exist: pytest says so itself, but only while collecting,
  after the run has written its (empty) reports; under xdist its workers collect, and the
  controller exited 5 without a word.
"""
from __future__ import annotations

from pathlib import Path

import pytest

from ..core.errors import CaseFileError
from ..core.paths import CASES_DIR
from ..operators import load_atk_file, load_case_file

# options whose value is a path, a name or a number as text: an empty one is never meant
VALUED = ("backend", "device", "soc", "report_dir", "golden_cache", "case_workers", "resume", "gate", "shard",
          "shard_durations", "atk")


def one_line(text: str) -> str:
    """A message as the one line an ERROR: line must be (YAML and OS errors come in several)."""
    return " ".join(str(text).split())


def check_values(config) -> None:
    for dest in VALUED:
        value = config.getoption(dest, None)
        values = value if isinstance(value, list) else [value]
        if any(isinstance(v, str) and not v.strip() for v in values):
            option = "--" + dest.replace("_", "-")
            raise pytest.UsageError(f"{option}: an empty value (an unset variable in the calling script?); "
                                    f"leave {option} out or give it a value")


def check_paths(config) -> None:
    """Every case path and node id on the command line exists, with pytest's own wording."""
    base = Path(config.invocation_params.dir)
    for arg in config.args:
        text = str(arg)
        file_part, *names = text.split("::")
        path = base / file_part
        if not path.exists():
            raise pytest.UsageError(f"file or directory not found: {text}")
        if names and not _names_a_case(path, names):
            raise pytest.UsageError(f"not found: {text} (no case of {file_part} has that name)")


def _names_a_case(path: Path, names: list[str]) -> bool:
    """pytest's rule for a node id's name part: the item's name, or its name without the parameters."""
    cases = _cases_of(path)
    if cases is None:            # not a case file, or one that does not load: collection says what is wrong
        return True
    if len(names) != 1:
        return False
    wanted = names[0]
    return any(n == wanted or n.split("[", 1)[0] == wanted for n in [*(c.name for c in cases), "case-file-error"])


def _cases_of(path: Path):
    try:
        if path.suffix in (".yaml", ".yml") and path.parent.name == "cases":
            return load_case_file(path)[1]
        if path.suffix == ".json":
            return load_atk_file(path, CASES_DIR)
    except CaseFileError:
        return None
    return None
