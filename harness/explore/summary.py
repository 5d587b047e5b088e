"""explore.json and explore.md: what an exploration ran, reached and found."""
from __future__ import annotations

import json
from pathlib import Path

from ..core import jsonsafe
from ..core.text import printable
from ..triage import features, signature as triage_sig, triage


def finding_dict(f) -> dict:
    return {"signature": f.signature, "case_id": f.plan.case.id, "kind": f.plan.case.kind,
            "example": f.plan.example.canonical(), "reason": f.record.get("reason", ""),
            "status": f.record.get("status"), "found_after_s": round(f.found_after_s, 2),
            "found_at_example": f.found_at_example, "minimal": f.minimal,
            "shrunk_after_s": None if f.shrunk_after_s is None else round(f.shrunk_after_s, 2),
            "reductions": f.reductions,
            **{k: v for k, v in f.emitted.items() if k != "text"}}


def causes(records: list[dict], findings: list) -> list[dict]:
    """The findings grouped by cause: the triage of every example the exploration ran (its passing
    ones too), and each finding put under the cause whose signature it has and whose predicate its
    record meets. Explore tells disagreements apart finely (a numeric one per dtype, since the fp32
    and fp16 paths differ); one bug that shows on three dtypes is still one cause. A finding that no
    cause covers stands alone."""
    t = triage(records)
    groups: list[dict] = []
    by_cause: dict[int, dict] = {}
    for i, f in enumerate(findings):
        present = {(name, value) for name, value, _cx in features.of(f.record)}
        failed_as = triage_sig.of(f.record)
        k = next((k for k, c in enumerate(t.causes) if c.signature == failed_as
                  and all((term["feature"], term["value"]) in present for term in c.terms)), None)
        if k is None:
            groups.append({"signature": failed_as, "predicate": None, "findings": [i]})
            continue
        if k not in by_cause:
            c = t.causes[k]
            by_cause[k] = {"signature": c.signature, "predicate": c.text, "precision": c.precision,
                           "recall": c.recall, "explained": c.explained, "findings": []}
            groups.append(by_cause[k])
        by_cause[k]["findings"].append(i)
    for g in groups:
        g["finding_signatures"] = [findings[i].signature for i in g["findings"]]
    return groups


def build(run: dict, searches: list, reach: dict, coverage: dict | None, records: list[dict] | None = None) -> dict:
    ops = {}
    for s in searches:
        ops[s.facts.name] = {"examples_run": s.examples, "seconds": round(s.spent_s, 1),
                             "chunks": dict(s.chunks), "disagreements": len(s.findings)}
    found = [f for s in searches for f in s.findings]
    return {"run": run, "ops": ops, "findings": [finding_dict(f) for f in found],
            "causes": causes(records or [], found),
            "reach": {op: {"family": run.get("family"), **r} for op, r in reach.items()}, "model_coverage": coverage}


def write(directory: Path, doc: dict, searches: list) -> tuple[Path, Path]:
    directory = Path(directory)
    js = directory / "explore.json"
    js.write_text(jsonsafe.dumps(doc) + "\n", encoding="utf-8")
    md = directory / "explore.md"
    md.write_text(markdown(doc, searches), encoding="utf-8")
    return js, md


def _table(rows: list[list], head: list[str]) -> list[str]:
    out = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    out += ["| " + " | ".join(printable(str(c)).replace("|", "\\|") for c in r) + " |" for r in rows]
    return out


def markdown(doc: dict, searches: list) -> str:
    run = doc["run"]
    lines = [f"# Exploration {run.get('run_id', '')}", "", f"**{run['banner']}**", "",
             f"`{run['command']}` (seed {run['seed']}, budget {run['budget_s']:.0f} s, "
             f"{run['started']} .. {run['ended']})", "",
             f"{run['examples']} examples run, {len(doc['findings'])} disagreement(s).", ""]
    lines += _table([[op, o["examples_run"], o["seconds"], o["disagreements"]] for op, o in doc["ops"].items()],
                    ["op", "examples run", "seconds", "disagreements"])
    if doc.get("causes"):
        lines += ["", f"## Causes: {len(doc['findings'])} finding(s), {len(doc['causes'])} cause(s)", ""]
        for i, g in enumerate(doc["causes"], 1):
            said = f"`{g['predicate']}` (precision {g['precision']:.2f}, recall {g['recall']:.2f} over the examples run)" \
                if g["predicate"] else "no short predicate over the examples run: stands alone"
            lines += [f"{i}. {printable(g['signature'])}: {said}; findings: {', '.join(g['finding_signatures'])}"]
    for s in searches:
        for f in s.findings:
            lines += ["", f"## {f.signature}", "", f"- reason: {printable(f.record.get('reason', ''))[:600]}",
                      f"- found after {f.found_after_s:.1f} s ({f.found_at_example} examples); minimal: {f.minimal}",
                      f"- reproduced by the emitted case: {f.emitted.get('reproduced')}",
                      f"- repro: `{f.emitted.get('repro', '')}`",
                      f"- C reproducer: {f.emitted.get('c_repro', f.emitted.get('c_repro_problem', '-'))}",
                      "", "```yaml", f.emitted.get("text", "").rstrip(), "```"]
    lines += ["", "## Reach", ""]
    for op, r in doc["reach"].items():
        lines += [f"### {op} on {run.get('family', '?')}", "", f"- examples: {r['examples']}; statuses: {r['statuses']}",
                  f"- checks decided: {r['checks_decided']}",
                  f"- checks never decided: {', '.join(r['checks_never_decided']) or 'none'}",
                  f"- dtypes: {r['dtypes']}", f"- layouts: {r['layouts']}; formats: {r['formats']}",
                  f"- values: {r['values']}", f"- defects: {r['defects']} (per example: {r['defect_counts']})",
                  f"- attribute ranges: {r['attr_ranges']}; flags: {r['flags']}",
                  f"- elements of self: {r['elements']}; last dimensions: {r['widths']}",
                  f"- skipped: {r['skipped']}", ""]
    cov = doc.get("model_coverage")
    if cov:
        lines += ["## Model branches never taken", ""]
        lines += _table([[f, c["lines"], c["lines_missed"], c["branches"], c["branches_missed"]]
                         for f, c in cov.items()], ["model", "lines", "missed", "branches", "missed"])
        for f, c in cov.items():
            if c["missing_branches"]:
                lines += ["", f"{f}:", ""] + [f"- {b}" for b in c["missing_branches"]]
    return "\n".join(lines) + "\n"


def load(directory: Path) -> dict:
    return json.loads((Path(directory) / "explore.json").read_text())
