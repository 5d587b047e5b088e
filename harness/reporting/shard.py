"""Deterministic sharding of the selected cases over n machines or processes.

Without durations, cases are sorted by id and dealt out round-robin (shard i of n takes every n-th
case starting at the i-th), so each shard gets a mix of operators and shapes. With recorded
durations, the longest cases are placed first, each on the shard with the least work so far
(ties: lowest shard), which balances wall time; a case without a recorded duration counts as the
median. Both depend only on the ids and the durations, never on the machine or the order of
collection, so every shard computes the same partition.
"""
from __future__ import annotations

import json
import statistics
from pathlib import Path

from ..core.argv import decimal
from ..core.errors import HarnessConfigError
from .records import RESULTS, ResultsError, read_records


class ShardError(HarnessConfigError):
    """A bad --shard or durations file; str() is one line."""


def parse(text: str) -> tuple[int, int]:
    """'2/4' -> (2, 4); shards count from 1."""
    if not str(text).strip():
        raise ShardError("--shard: an empty value (an unset variable in the calling script?); expected i/n, e.g. 1/4")
    try:
        i, n = (decimal(x, integer=True) for x in str(text).split("/"))     # not `1_0`, `١` (core/argv.py)
    except ValueError:
        raise ShardError(f"--shard {text!r}: expected i/n, e.g. 1/4") from None
    if not (n >= 1 and 1 <= i <= n):
        raise ShardError(f"--shard {text!r}: need 1 <= i <= n")
    return i, n


def assign(ids: list[str], n: int, durations: dict[str, float] | None = None) -> dict[str, int]:
    """case id -> shard (1-based) for every id."""
    ordered = sorted(set(ids))
    if not durations:
        return {cid: k % n + 1 for k, cid in enumerate(ordered)}
    known = [durations[c] for c in ordered if c in durations]
    default = statistics.median(known) if known else 1.0
    cost = {c: float(durations.get(c, default)) for c in ordered}
    load = [0.0] * n
    out = {}
    for cid in sorted(ordered, key=lambda c: (-cost[c], c)):
        k = min(range(n), key=lambda j: (load[j], j))
        load[k] += cost[cid]
        out[cid] = k + 1
    return out


def select(ids: list[str], shard: tuple[int, int], durations: dict[str, float] | None = None) -> list[bool]:
    """For each id (in the given order): does shard i/n run it?"""
    i, n = shard
    owner = assign(ids, n, durations)
    return [owner[c] == i for c in ids]


def load_durations(path: Path) -> dict[str, float]:
    """case id -> seconds, from a report directory, its results.jsonl, or a JSON object {id: seconds}."""
    if not str(path).strip():
        raise ShardError("--shard-durations: an empty value (an unset variable in the calling script?)")
    path = Path(path)
    if path.is_dir():
        path = path / RESULTS
    if path.suffix == ".json":
        try:
            data = json.loads(path.read_bytes().decode("utf-8"))
        except OSError as e:
            raise ShardError(f"--shard-durations {path}: cannot read ({e.strerror})") from None
        except UnicodeDecodeError:
            raise ShardError(f"--shard-durations {path}: not UTF-8 text") from None
        except json.JSONDecodeError as e:
            raise ShardError(f"--shard-durations {path}: not valid JSON ({e.msg})") from None
        if not isinstance(data, dict) or not all(isinstance(v, (int, float)) for v in data.values()):
            raise ShardError(f"--shard-durations {path}: expected an object {{case id: seconds}}")
        return {str(k): float(v) for k, v in data.items()}
    try:
        records = read_records(path)
    except ResultsError as e:
        raise ShardError(f"--shard-durations {e}") from None
    out = {}
    for rec in records:
        seconds = (rec.get("timings") or {}).get("total", rec.get("duration_s"))
        if isinstance(seconds, (int, float)):
            out[rec["case_id"]] = float(seconds)
    return out
