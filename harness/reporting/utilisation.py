"""How busy each device of a run was: its device time over the run's wall time, one row per device.

busy, per device (the record's `backend.device`): the device time of every case that device ran,
  * the ACL events' elapsed time around its launches where the record has it (`perf`: the perf
    mode's timed launches: cold, samples and re-measured ones), else
  * `device_s`: phase 2 + stream sync wall time of every launch the case made (its judged launch,
    a determinism re-run, a batch slice, a repeatable executor's second launch), as its case worker
    measured them: the device's time plus each launch's host overhead (older records: `launch_s`,
    the judged launch alone).
  Each row says which it used ("events", "launches", or both). The perf mode's records count its
  timed launches only: the judged launches before them are not event-timed.
wall: the span in which the run's case workers ran cases, from the first case's start (`started_at`)
  to the last one's end (`started_at` + `timings.total`): what one run could have kept its devices
  busy for. The run's start-up (collection, the workers' torch import) is before it.

One device runs one case at a time, so busy cannot exceed wall: a row whose measured busy time
does (event times no device could have taken) gets no utilisation (null) and an `inconsistent`
text saying so, never a share over 100 % (consistent()).

summary.json (`utilisation`), summary.md and the terminal summary show it.
"""
from __future__ import annotations

from collections import defaultdict

from ..core.text import printable

EVENTS, LAUNCHES = "events", "launches"
SOURCES = {EVENTS: "ACL events around the perf mode's timed launches",
           LAUNCHES: "phase 2 + stream sync wall time of each case's launches"}


def device_time(rec: dict) -> tuple[float, str] | None:
    """(seconds the case kept its device busy, which measure), or None when the record has neither."""
    perf = rec.get("perf")
    if isinstance(perf, dict):
        timed = [perf.get("cold_ms")] + list(perf.get("samples_ms") or []) + list(perf.get("remeasured_ms") or [])
        ms = [t for t in timed if isinstance(t, (int, float))]
        if ms:
            return sum(ms) / 1e3, EVENTS
    launches = rec.get("device_s", rec.get("launch_s"))
    if isinstance(launches, (int, float)):
        return float(launches), LAUNCHES
    return None


def consistent(busy_s: float, wall_s: float | None) -> tuple[float | None, str | None]:
    """(busy / wall, None), or (None, why) where the measured busy time exceeds the wall time: a
    device busy longer than the run took is a measurement that cannot be true, not a utilisation."""
    if not wall_s:
        return None, None
    if busy_s > wall_s:
        return None, (f"inconsistent: the measured device time {busy_s:.4g} s exceeds the {wall_s:.4g} s wall "
                      "time (busy can never exceed wall on one device): the device times are not credible")
    return busy_s / wall_s, None


def span(records: list[dict]) -> tuple[float, float] | None:
    """(first case's start, last case's end), epoch seconds, over the records that say when they ran."""
    starts, ends = [], []
    for rec in records:
        start, total = rec.get("started_at"), (rec.get("timings") or {}).get("total")
        if isinstance(start, (int, float)) and isinstance(total, (int, float)):
            starts.append(start)
            ends.append(start + total)
    return (min(starts), max(ends)) if starts else None


def summary(records: list[dict]) -> dict | None:
    """{wall_s, busy_s, devices: [{device, cases, busy_s, utilisation, source}]}, devices in name order;
    None when no record ran on a device with a device time."""
    when = span(records)
    if when is None:
        return None
    wall = max(when[1] - when[0], 1e-9)
    busy, cases, sources = defaultdict(float), defaultdict(int), defaultdict(set)
    for rec in records:
        device = (rec.get("backend") or {}).get("device") if isinstance(rec.get("backend"), dict) else None
        timed = device_time(rec)
        if not device or timed is None:
            continue
        busy[device] += timed[0]
        cases[device] += 1
        sources[device].add(timed[1])
    if not busy:
        return None
    rows = []
    for d in sorted(busy, key=_device_order):
        share, inconsistent = consistent(busy[d], wall)
        rows.append({"device": d, "cases": cases[d], "busy_s": round(busy[d], 6),
                     "utilisation": None if share is None else round(share, 4), "source": "+".join(sorted(sources[d])),
                     **({"inconsistent": inconsistent} if inconsistent else {})})
    return {"wall_s": round(wall, 6), "busy_s": round(sum(busy.values()), 6), "devices": rows,
            "sources": {s: SOURCES[s] for s in sorted(set().union(*sources.values()))}}


def _device_order(name: str):
    """npu:2 before npu:10."""
    head, _, tail = name.rpartition(":")
    return (head, int(tail)) if tail.isdigit() else (name, -1)


def lines(util: dict | None) -> list[str]:
    """The terminal's lines: a heading, then one line per device."""
    if not util:
        return []
    out = [f"device utilisation (busy / {util['wall_s']:.2f} s, the span of the run's cases; busy = "
           + "; ".join(f"{k}: {v}" for k, v in util["sources"].items()) + ")"]
    for row in util["devices"]:
        share = (f"{row['utilisation'] * 100:5.1f} % busy" if row.get("utilisation") is not None
                 else row.get("inconsistent") or "utilisation unknown")
        out.append(f"  {row['device']}: {share} ({row['busy_s']:.4g} s), {row['cases']} case(s) [{row['source']}]")
    return out


def _cell(text: str) -> str:
    """A device name as one table cell: a backend's device string is free text."""
    return printable(text).replace("|", "\\|")


def markdown(util: dict | None) -> list[str]:
    if not util:
        return []
    out = ["## Device utilisation", "",
           f"Busy time over the {util['wall_s']:.2f} s in which the run's cases ran; busy = "
           + "; ".join(f"`{k}`: {v}" for k, v in util["sources"].items()) + ".", "",
           "| device | utilisation | busy (s) | cases | measured by |", "|---|---|---|---|---|"]
    out += [f"| {_cell(r['device'])} | "
            + (f"{r['utilisation'] * 100:.1f} %" if r.get("utilisation") is not None else _cell(r.get("inconsistent") or "unknown"))
            + f" | {r['busy_s']:.4g} | {r['cases']} | {r['source']} |" for r in util["devices"]]
    return out + [""]
