"""Per-process JSON Lines journals: the results that are never lost.

Every pytest process that runs cases appends, to its own file under <report-dir>/journal/,
a `start` line before a case runs and an `end` line (the whole record) after; each line is
flushed before the next case starts, so killing the run loses at most the cases in flight,
and those are visible as a `start` without an `end`. The controller merges the journals
into results.jsonl (one record per case, the last one written wins); a case that started
but never finished is MISSING with its id. `--resume DIR` skips every case with an `end`.

    python -m harness.execution.journal DIR     # finished / MISSING, from the journals alone
"""
from __future__ import annotations

import json
import os
import re
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from ..core import jsonsafe
from ..core.status import Status

DIRNAME = "journal"


class Journal:
    def __init__(self, directory: Path, run_id: str, writer: str):
        self.path = Path(directory) / DIRNAME / f"{run_id}-{writer}.jsonl"
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._file = open(self.path, "a", encoding="utf-8")
        if self._file.tell() and not _ends_a_line(self.path):
            # a resumed run's file whose last line a kill cut short: the next entry starts a line of
            # its own (glued to the cut one, it was damaged too, and its case id read as a new case)
            self._file.write("\n")
            self._file.flush()
        self.run_id, self.writer = run_id, writer
        # what this object wrote, so that the process that wrote a journal need not read it back
        # (scan(own=...)); only for a file it started: a resumed run's file holds earlier entries
        self.entries: list[dict] | None = [] if self._file.tell() == 0 else None

    def _write(self, entry: dict) -> None:
        self._file.write(jsonsafe.dumps(entry) + "\n")
        self._file.flush()                   # in the kernel before the next case starts
        if self.entries is not None:
            self.entries.append(entry)

    def started(self, case_id: str, nodeid: str, op: str | None) -> None:
        self._write({"event": "start", "case_id": case_id, "nodeid": nodeid, "op": op, "t": time.time(),
                     "run_id": self.run_id, "writer": self.writer, "pid": os.getpid()})

    def finished(self, record: dict) -> None:
        self._write({"event": "end", "case_id": record["case_id"], "t": time.time(), "run_id": self.run_id,
                     "writer": self.writer, "record": record})

    def lost(self, case_id: str, nodeid: str, op: str | None, reason: str) -> None:
        """This process stops taking cases (its device is lost): `case_id`, started, was not run here.
        Another process may still run it; if none does, it is MISSING with `reason`."""
        self._write({"event": "lost", "case_id": case_id, "nodeid": nodeid, "op": op, "t": time.time(),
                     "run_id": self.run_id, "writer": self.writer, "pid": os.getpid(), "reason": reason})

    def close(self) -> None:
        self._file.close()


def _ends_a_line(path: Path) -> bool:
    with open(path, "rb") as f:
        f.seek(-1, os.SEEK_END)
        return f.read(1) == b"\n"


@dataclass
class State:
    """What the journals of a report directory say."""
    final: dict[str, dict] = field(default_factory=dict)        # case id -> its last record
    unfinished: dict[str, tuple[dict, str]] = field(default_factory=dict)  # case id -> (its start, why)
    lost: dict[str, str] = field(default_factory=dict)          # writer -> why it stopped taking cases
    unreadable: list[str] = field(default_factory=list)         # "file:line" of every line that is not an entry,
    #                                                             skipped (with the case it names, where known)

    def records(self) -> list[dict]:
        """The last record of every case that finished (a case not run for a lost device included)."""
        return list(self.final.values())

    def done_ids(self) -> set[str]:
        """Cases a resumed run need not run again."""
        return {cid for cid, rec in self.final.items() if rec.get("status") != Status.MISSING.value}

    def unfinished_ids(self) -> set[str]:
        """Cases a resumed run runs again: started and never finished, or not run (device lost)."""
        return set(self.unfinished) | (set(self.final) - self.done_ids())


def why_unfinished(start: dict, stopped: str | None = None) -> str:
    """The reason of a case that started and never finished; stopped: the signal that stopped this
    run and when (stopping.py), if one did."""
    when = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(start.get("t", 0)))
    why = f"the run was stopped by {stopped}" if stopped else "the run was killed?"
    return (f"MISSING: started at {when} by {start.get('writer')} (pid {start.get('pid')}) of run "
            f"{start.get('run_id')} and never finished ({why})")


_CASE_ID = re.compile(r'"case_id":\s*("(?:[^"\\]|\\.)*")')


def _entries(directory: Path, skip: set[str] = frozenset(), bad: list | None = None):
    """Every well-formed entry of the journals; a line that is not one (cut short by a kill, damaged)
    goes to `bad` as (file:line, the case id it names or None)."""
    for path in sorted((Path(directory) / DIRNAME).glob("*.jsonl")):
        if path.name in skip:
            continue
        with open(path, encoding="utf-8", errors="replace") as f:
            for n, line in enumerate(f, 1):
                try:
                    entry = json.loads(line)
                except json.JSONDecodeError:
                    entry = None
                if _well_formed(entry):    # anything else is damage: counted, never a crash
                    yield entry
                elif line.strip() and bad is not None:
                    bad.append((f"{path.name}:{n}", _case_named(line)))


def _well_formed(entry) -> bool:
    return (isinstance(entry, dict) and isinstance(entry.get("t", 0), (int, float))
            and (entry.get("event") != "end" or isinstance(entry.get("record"), dict)))


def _case_named(line: str) -> str | None:
    match = _CASE_ID.search(line)
    try:
        return json.loads(match.group(1)) if match else None
    except json.JSONDecodeError:
        return None


def _assigned(directory: Path) -> set[str]:
    """The case ids the run's manifest.json assigned (none when it is missing or unreadable)."""
    try:
        doc = json.loads((Path(directory) / "manifest.json").read_text(encoding="utf-8"))
        return {a["case_id"] for a in doc.get("assigned") or [] if isinstance(a, dict) and isinstance(a.get("case_id"), str)}
    except (OSError, ValueError, AttributeError, TypeError):
        return set()


def scan(directory: Path, own: tuple["Journal", ...] = (), stopped: str | None = None,
         run_id: str | None = None) -> State:
    """What the journals of `directory` say. `own`: journals this process wrote (and still holds
    open); their entries are taken from memory instead of parsed back from disk (for a run of
    3,000 cases that was 0.15 s at the end of every run). stopped: what stopped run `run_id`,
    the one now ending, for the reason of a case it left unfinished (an earlier run's, resumed
    from, still say 'killed?').

    A damaged line is skipped and listed in `unreadable`. The case id it seems to name is trusted
    only where the run knows that case (its manifest assigned it, or a readable line names it):
    damage inside the id must not make up a case that does not exist (a phantom MISSING record)."""
    state = State()
    known = [j for j in own if j is not None and j.entries is not None]
    skip = {j.path.name for j in known}
    bad: list = []
    entries = [*_entries(directory, skip, bad), *(e for j in known for e in j.entries)]
    for entry in sorted(entries, key=lambda e: e.get("t", 0)):
        case_id = entry.get("case_id")
        event = entry.get("event")
        if event in ("start", "lost"):
            if case_id not in state.final:
                ours = stopped and entry.get("run_id") == run_id
                why = (f"MISSING: not run: {entry.get('reason')}" if event == "lost"
                       else why_unfinished(entry, stopped if ours else None))
                state.unfinished[case_id] = (entry, why)
            if event == "lost":
                state.lost[str(entry.get("writer"))] = str(entry.get("reason"))
        elif event == "end":
            state.final.pop(case_id, None)       # keep insertion order of the latest
            state.final[case_id] = entry["record"]
            state.unfinished.pop(case_id, None)
    known = _assigned(directory) if any(case_id for _, case_id in bad) else set()
    for where, case_id in bad:
        state.unreadable.append(where)
        if case_id and case_id in known and case_id not in state.final and case_id not in state.unfinished:
            state.unfinished[case_id] = ({"case_id": case_id, "event": "start"},
                                         f"MISSING: its journal line {where} is unreadable (damaged, or cut short "
                                         "by a kill)")
    return state


def lost_reason(directory: Path, run_id: str, writer: str, tail_bytes: int = 64 * 1024) -> str | None:
    """Why process `writer` of run `run_id` stopped taking cases, if its journal ends saying so."""
    path = Path(directory) / DIRNAME / f"{run_id}-{writer}.jsonl"
    try:
        with open(path, "rb") as f:
            f.seek(max(0, f.seek(0, os.SEEK_END) - tail_bytes))
            lines = f.read().decode("utf-8", errors="replace").splitlines()
    except OSError:
        return None
    for line in reversed(lines):
        try:
            entry = json.loads(line)
        except json.JSONDecodeError:
            continue
        if isinstance(entry, dict) and entry.get("event") == "lost":
            return str(entry.get("reason"))
    return None


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print("ERROR: usage: python -m harness.execution.journal REPORT_DIR", file=sys.stderr)
        return 4                      # a usage error, as every command line of the harness says it
    state = scan(Path(argv[1]))
    again = sorted(state.unfinished_ids())
    print(f"{len(state.done_ids())} finished, {len(again)} MISSING (started and never finished, or not run)")
    if state.unreadable:
        print(f"{len(state.unreadable)} journal line(s) unreadable: {', '.join(state.unreadable[:10])}")
    for case_id in again:
        print(f"MISSING {case_id}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
