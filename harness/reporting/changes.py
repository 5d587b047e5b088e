"""Night over night: what changed between a previous run (or merged sweep) and this one.

New failures, fixed cases, new flakes, and metric drifts: a metric whose share of its threshold
grew by at least `drift` times (a case whose MERE doubled is worth a look even while it passes).
"""
from __future__ import annotations

from .records import family_of, metrics_of, status_of, threshold_ratio
from ..core.status import Status

_BAD = frozenset({Status.FAIL, Status.CRASH, Status.TIMEOUT, Status.MISSING})


def _index(records: list[dict]) -> dict[tuple[str, str], dict]:
    return {(family_of(r) or "any", r["case_id"]): r for r in records}


def _metrics(rec: dict) -> dict[str, float]:
    out = {}
    for m in rec.get("metrics") or metrics_of(rec.get("verdict")):
        ratio = threshold_ratio(m)
        if ratio is not None:
            out[m["name"]] = ratio
    return out


def compare(current: list[dict], previous: list[dict], drift: float = 2.0, floor: float = 0.0,
            previous_label: str = "the previous run") -> dict:
    """{new_failures, fixed, new_flakes, drifts, appeared, disappeared}: lists of {case_id, family, text}."""
    now, before = _index(current), _index(previous)
    out = {k: [] for k in ("new_failures", "fixed", "new_flakes", "drifts", "appeared", "disappeared")}
    out["previous"] = previous_label
    for key in sorted(now):
        fam, cid = key
        rec, old = now[key], before.get(key)
        s = status_of(rec)
        item = {"case_id": cid, "family": fam}
        if old is None:
            out["appeared"].append({**item, "text": f"{cid} ({fam}): new case, {s.value}"})
            if s in _BAD:
                out["new_failures"].append({**item, "text": f"{cid} ({fam}): {s.value} (new case): {rec.get('reason', '')}"})
            continue
        o = status_of(old)
        if s in _BAD and o not in _BAD:
            out["new_failures"].append({**item, "text": f"{cid} ({fam}): {o.value} -> {s.value}: {rec.get('reason', '')}"})
        elif s == Status.PASS and (o in _BAD or o == Status.EXPECTED_FAIL):
            out["fixed"].append({**item, "text": f"{cid} ({fam}): {o.value} -> PASS"})
        if s == Status.FLAKE and o != Status.FLAKE:
            out["new_flakes"].append({**item, "text": f"{cid} ({fam}): FLAKE (was {o.value})"})
        m_now, m_old = _metrics(rec), _metrics(old)
        for name in sorted(set(m_now) & set(m_old)):
            a, b = m_old[name], m_now[name]
            if a > 0 and b >= floor and b / a >= drift:
                out["drifts"].append({**item, "metric": name, "ratio": b / a,
                                      "text": f"{cid} ({fam}): {name} grew {b / a:.3g}x "
                                              f"({a:.3g} -> {b:.3g} of its threshold), now {s.value}"})
    for key in sorted(set(before) - set(now)):
        out["disappeared"].append({"case_id": key[1], "family": key[0], "text": f"{key[1]} ({key[0]}): not in this run"})
    return out


def lines(changes: dict) -> list[str]:
    out = [f"changes since {changes.get('previous')}: " + ", ".join(
        f"{len(changes[k])} {k.replace('_', ' ')}" for k in ("new_failures", "fixed", "new_flakes", "drifts",
                                                              "appeared", "disappeared"))]
    for k in ("new_failures", "new_flakes", "drifts", "fixed"):
        for item in changes[k][:30]:
            out.append(f"  {k.replace('_', ' ')}: {item['text']}")
    return out
