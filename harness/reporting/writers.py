"""summary.md and junit.xml, written from a Report (model.py)."""
from __future__ import annotations

from collections import Counter
from pathlib import Path

from .changes import digest_splits
from .gate import is_gate_failure
from .perf.summary import markdown as perf_markdown
from .runs import Report
from .records import status_of
from .utilisation import markdown as utilisation_markdown, summary as utilisation_summary
from ..core.status import Status
from ..core.text import printable

_IDENTITY_ROWS = ("backend", "simulated", "soc_name", "family", "cann_version", "suite_commit", "started", "ended",
                  "stopped", "command", "host")


def _cell(text) -> str:
    """One table cell or list item: one line, every non-printable character escaped."""
    return printable(str(text).replace("\n", " ")).replace("|", "\\|")


def causes_md(report: Report, shown: int = 10) -> list[str]:
    """The "Causes" section (harness/triage): each cause's predicate, counts and first cases; the
    failures no short predicate explains. Nothing for a run without failures."""
    if report.brief:
        return [f"_{report.brief}_", ""]
    t = report.causes()
    if not t.failures:
        return []
    confirmed = report.confirmations()
    out = ["## Causes", "", f"{t.failures} failure(s) against {t.passing:,} passing case(s); a cause is the shortest "
           "conjunction of the cases' facts that separates its failures from the passing cases "
           "(`python -m harness.reporting triage RUN_DIR`).", ""]
    for i, c in enumerate(t.causes, 1):
        fams = f" on {', '.join(c.families)}" if len(c.families) > 1 else ""
        out += [f"### cause {i} — {c.explained} {_cell(c.signature)}{_cell(fams)}", "", f"`{_cell(c.text)}`", "",
                f"explains {c.explained}/{c.failures} of these failures; {c.passing_matched} of {c.passing:,} passing "
                f"cases match (precision {c.precision:.2f}, recall {c.recall:.2f})", ""]
        if c.equivalents:
            out += ["equally: " + "; ".join(f"`{_cell(e)}`" for e in c.equivalents), ""]
        if c.failed_metrics:
            out += ["past their threshold: " + ", ".join(f"{_cell(k)} {n}" for k, n in c.failed_metrics.items()), ""]
        out += confirmation_md(confirmed.get((c.signature, c.text)))
        out += [f"- `{_cell(x['case_id'])}` ({_cell(x['family'] or 'any')})" for x in c.cases[:shown]]
        out += [f"- … and {len(c.cases) - shown} more" if len(c.cases) > shown else "", ""]
    for u in t.unexplained:
        out += [f"### unexplained — {u.failures} {_cell(u.signature)}", "", _cell(u.why), ""]
        out += [f"- `{_cell(x['case_id'])}` ({_cell(x['family'] or 'any')})" for x in u.cases[:shown]]
        out += [f"- … and {len(u.cases) - shown} more" if len(u.cases) > shown else "", ""]
    return out


def confirmation_md(c: dict | None) -> list[str]:
    """What the experiment of `triage --confirm` said of one cause, and its minimal failure."""
    if not c:
        return []
    if c.get("confirmed_as") and c["confirmed_as"] != c.get("predicate"):
        tried = c.get("tried") or [{}]
        out = [f"**confirmed as** `{_cell(c['confirmed_as'])}`: the run's records could not tell it from the predicate "
               f"above, which the experiment found {_cell(tried[0].get('verdict'))}", ""]
    else:
        out = []
    out += [f"**{_cell(c.get('verdict'))}** by experiment: inside the predicate {_cell(c.get('inside'))} new cases "
           f"failed as predicted, outside it {_cell(c.get('outside'))} did not" + (f"; {_cell(c['why'])}" if c.get("why") else ""), ""]
    m = c.get("minimal") or {}
    if m.get("case_id"):
        out += [f"minimal failure: `{_cell(m['case_id'])}`" + (f", C reproducer in `{_cell(m['c_repro'])}`" if m.get("c_repro") else ""),
                "", "```yaml", *str(m.get("text") or "").rstrip().splitlines(), "```", ""]
    return out


def summary_md(report: Report) -> str:
    out = [f"# {_cell(report.title)}", ""]
    out += causes_md(report)             # causes first: where a reader of many failures starts
    for run in report.runs:
        ident = run.identity
        kind = "SIMULATED (not hardware)" if ident.get("simulated") else "HARDWARE"
        out += [f"## {_cell(run.label)}: {kind}", "", "| | |", "|---|---|"]
        out += [f"| {k} | {_cell(ident.get(k, ''))} |" for k in _IDENTITY_ROWS if ident.get(k) not in (None, "")]
        for path, sha in (ident.get("library_sha256") or {}).items():
            out.append(f"| library | `{_cell(path)}` sha256 `{sha}` |")
        for k, v in (ident.get("switches") or {}).items():
            out.append(f"| switch | `{k}={_cell(v)}` |")
        out.append("")
    if report.gate_lines:
        out += ["## Gate", "", "```", *(printable(line) for line in report.gate_lines), "```", ""]
    if report.problems:
        out += ["## Problems with the runs", ""] + [
            f"- **{p.kind}**: {_cell(p.message)}" + ("" if p.blocking else " (noted, not failing)") for p in report.problems] + [""]
    out += ["## Totals", "", " · ".join(f"{s.value} {n}" for s, n in report.ordered_totals()) or "no results", ""]
    fams = report.families
    out += ["## Operator × dtype × family", "", "| operator | dtype | " + " | ".join(fams) + " |",
            "|---|---|" + "---|" * len(fams)]
    for row in report.matrix():
        cells = [", ".join(f"{s.value} {n}" for s, n in row["cells"][f]["counts"]) or "–" for f in fams]
        out.append(f"| {row['op']} | {row['dtype']} | " + " | ".join(cells) + " |")
    out.append("")
    listed = report.listed()
    if listed:
        out += ["## Not passing", ""]
        for r in listed[:200]:
            out.append(f"- **{status_of(r).value}** `{_cell(r['case_id'])}` ({_cell(r.get('family') or 'any')}): "
                       f"{_cell(r.get('reason', ''))}")
            if r.get("repro") and status_of(r) not in (Status.EXPECTED_FAIL,):
                out.append(f"  - repro: `{_cell(r['repro'])}`")
        if len(listed) > 200:
            out.append(f"- … and {len(listed) - 200} more (results.jsonl)")
        out.append("")
    if report.changes:
        out += ["## Changes since the previous run", ""]
        for key, title in (("new_failures", "new failures"), ("fixed", "fixed"), ("new_flakes", "new flakes"),
                           ("drifts", "metric drifts"), ("perf_drifts", "perf drifts"),
                           ("digest_changes", "output digests changed"),
                           ("allowed_nondeterminism", "output digests changed where the spec lets the bits vary "
                                                      "(allowed nondeterminism, not drift)"),
                           ("appeared", "new cases"),
                           ("disappeared", "cases gone")):
            items = report.changes.get(key) or []
            out.append(f"- {title}: {len(items)}")
            for item in items[:50]:
                out.append(f"  - {_cell(item['text'])}")
        out.append("")
    out += perf_markdown(report.records)
    if len(report.runs) == 1:         # device names mean one machine's devices only within one run
        out += utilisation_markdown(utilisation_summary(report.records))
    splits = digest_splits(report.records)
    if splits:
        out += ["## Outputs that differ between families", ""] + [f"- {_cell(s['text'])}" for s in splits[:100]] + [""]
    return "\n".join(out)


# XML 1.0 cannot hold most control characters at all (a library message may carry them):
# printable() shows them as \xNN first, then the markup characters are escaped
_ATTR_ESCAPES = str.maketrans({"&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "\n": "&#10;", "\t": "&#09;"})
_TEXT_ESCAPES = str.maketrans({"&": "&amp;", "<": "&lt;", ">": "&gt;"})


def _xml_attr(value) -> str:
    return printable(value, lines=True).translate(_ATTR_ESCAPES)


def _start(name: str, attrs: dict, indent: str = "") -> str:
    """The start tag without its closing '>' (an empty element ends it with '/>')."""
    return indent + "<" + name + "".join(f' {k}="{_xml_attr(v)}"' for k, v in attrs.items())


def _element(name: str, attrs: dict, text: str | None = None, indent: str = "") -> str:
    head = _start(name, attrs, indent)
    if text is None:
        return head + "/>"
    return head + ">" + printable(text, lines=True).translate(_TEXT_ESCAPES) + "</" + name + ">"


def junit_xml(report: Report) -> bytes:
    """One testsuite per run; the run's identity as suite properties; per case, its status and identity.
    Written as text (ElementTree's tree and serializer were most of a 3,000-case report's time)."""
    out = ['<?xml version="1.0" encoding="utf-8"?>', f'<testsuites name="{_xml_attr(report.title)}">']
    by_dir: dict[str, list[dict]] = {}
    for r in report.records:
        by_dir.setdefault(r.get("_run", ""), []).append(r)
    for run in report.runs or []:
        recs = by_dir.get(run.directory, []) if len(report.runs) > 1 else report.records
        failures = sum(1 for r in recs if is_gate_failure(r) and status_of(r) != Status.CRASH)
        errors = sum(1 for r in recs if status_of(r) == Status.CRASH)
        skipped = sum(1 for r in recs if status_of(r) in (Status.SKIP, Status.EXPECTED_FAIL))
        out.append(_start("testsuite", {"name": run.label, "tests": len(recs), "failures": failures,
                                        "errors": errors, "skipped": skipped}, indent="  ") + ">")
        out.append("    <properties>")
        ident = run.identity
        props = [(k, ident[k]) for k in _IDENTITY_ROWS if ident.get(k) not in (None, "")]
        props += [(f"sha256:{path}", sha) for path, sha in (ident.get("library_sha256") or {}).items()]
        props += [(f"switch:{k}", v) for k, v in (ident.get("switches") or {}).items()]
        out += [_element("property", {"name": k, "value": v}, indent="      ") for k, v in props]
        out.append("    </properties>")
        for r in recs:
            op, _, name = r["case_id"].partition(".")
            t = (r.get("timings") or {}).get("total", r.get("duration_s", 0)) or 0
            out.append(_start("testcase", {"classname": f"{op}.{r.get('family') or 'any'}", "name": name,
                                           "time": f"{float(t):.3f}"}, indent="    ") + ">")
            out.append("      <properties>")
            out += [_element("property", {"name": k, "value": r[k]}, indent="        ")
                    for k in ("status", "raw_status", "family", "soc_name", "nodeid", "repro") if r.get(k)]
            out.append("      </properties>")
            status, reason = status_of(r), str(r.get("reason") or "")
            if status == Status.CRASH:
                out.append(_element("error", {"message": f"CRASH: {reason}"[:1000], "type": "CRASH"}, indent="      "))
            elif is_gate_failure(r):
                out.append(_element("failure", {"message": f"{status.value}: {reason}"[:1000], "type": status.value},
                                    reason + (f"\nrepro: {r['repro']}" if r.get("repro") else ""), indent="      "))
            elif status in (Status.SKIP, Status.EXPECTED_FAIL):
                out.append(_element("skipped", {"message": f"{status.value}: {reason}"[:1000]}, indent="      "))
            out.append("    </testcase>")
        out.append("  </testsuite>")
    out.append("</testsuites>")
    return ("\n".join(out) + "\n").encode("utf-8", errors="replace")


def write_all(report: Report, directory: Path, html: bool = True) -> dict[str, Path]:
    """summary.md, junit.xml and (unless html=False) report.html into directory."""
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    paths = {"summary.md": directory / "summary.md", "junit.xml": directory / "junit.xml"}
    paths["summary.md"].write_text(summary_md(report) + "\n", encoding="utf-8")
    paths["junit.xml"].write_bytes(junit_xml(report))
    if html:
        paths["report.html"] = directory / "report.html"
        if report.brief:        # a stopped run: its grace period is for the records (render draws the rest)
            paths["report.html"].write_text(brief_html(report), encoding="utf-8")
        else:
            from .html import render
            paths["report.html"].write_text(render(report), encoding="utf-8")
    return paths


def brief_html(report: Report) -> str:
    """The report.html of a stopped run: its title, totals and why the rest is left out (self-contained,
    no script, no link, as the full report)."""
    import html as html_mod
    totals = Counter(status_of(r).value for r in report.records)
    rows = "".join(f"<li>{html_mod.escape(k)}: {n}</li>" for k, n in sorted(totals.items()))
    return (f"<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>{html_mod.escape(report.title)}"
            f"</title></head><body><h1>{html_mod.escape(report.title)}</h1><p class=\"brief\">"
            f"{html_mod.escape(report.brief)}</p><ul>{rows}</ul><p>summary.md, summary.json, junit.xml and "
            "results.jsonl hold every case.</p></body></html>\n")
