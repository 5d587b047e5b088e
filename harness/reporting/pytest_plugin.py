"""pytest glue for gating, reruns, sharding, failure dumps and the reports.

Loaded by harness.plugin. Options: --gate BASELINE, --reruns N, --shard i/n, --shard-durations
FILE, --dump-failures, --no-html. The logic lives in this package's modules; these hooks only
connect them to pytest (collection, the controller's reports, the end of the session).
"""
from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from . import baseline as bl, records as rec_mod, repro, shard as shard_mod, identity
from .execute import baseline_for, report_dir
from .gate import is_gate_failure
from .session import Recorder
from .status import Status

_RECORDER = pytest.StashKey()
_STATE: dict = {}


def pytest_addoption(parser):
    g = parser.getgroup("aclnn conformance: gating and reports")
    g.addoption("--gate", default=None, metavar="BASELINE",
                help="baseline file or directory (its files are picked by target: backend + family [+ CANN "
                     "version]); exit non-zero only on new failures, crashes, timeouts, missing cases or stale "
                     "baseline entries (UNEXPECTED_PASS)")
    g.addoption("--reruns", type=int, default=0, metavar="N",
                help="rerun a failing case up to N times; a case that then passes is a FLAKE")
    g.addoption("--shard", default=None, metavar="i/n",
                help="run shard i of n (1-based) of the selected cases: deterministic, interleaved")
    g.addoption("--shard-durations", default=None, metavar="FILE",
                help="balance shards by recorded durations (a report directory, results.jsonl, or {id: s} JSON)")
    g.addoption("--dump-failures", action="store_true",
                help="write each failing case's inputs, golden, actual output and metrics to "
                     "<report-dir>/failures/<case>.npz")
    g.addoption("--no-html", action="store_true", help="skip report.html (the other reports are still written)")


def pytest_configure(config):
    _STATE["config"], _STATE["started"] = config, identity.now()
    try:
        if config.getoption("shard"):
            shard_mod.parse(config.getoption("shard"))
        if config.getoption("shard_durations"):
            _STATE["durations"] = shard_mod.load_durations(Path(config.getoption("shard_durations")))
        gate = config.getoption("gate")
        if gate and Path(gate).is_file():
            bl.load_file(Path(gate))                        # a malformed baseline stops the run at once
        elif gate and not Path(gate).is_dir():
            raise bl.BaselineError(f"--gate {gate}: baseline file or directory not found")
        if config.getoption("reruns") < 0:
            raise pytest.UsageError("--reruns: must be >= 0")
    except (shard_mod.ShardError, bl.BaselineError) as e:
        raise pytest.UsageError(str(e)) from None


def _props(config) -> dict:
    from ..plugin import get_backend
    return get_backend(config).info.as_properties()


# ------------------------------------------------------------------ selection: baseline skips, shard, manifest

@pytest.hookimpl(trylast=True)     # after -k/-m, tier and family selection: shard what is left
def pytest_collection_modifyitems(config, items):
    cases = [it for it in items if getattr(it, "case", None) is not None]
    if not cases or config.getoption("collectonly") and not config.getoption("shard"):
        return
    spec = config.getoption("shard")
    props = None if config.getoption("collectonly") else _props(config)
    base = baseline_for(config, props) if props else None
    for it in cases:
        entry = base.find("skips", it.case.id) if base else None
        if entry:
            it.add_marker(pytest.mark.skip(reason=f"baseline {entry.source}: {entry.reason} ({entry.link})"))
    keep = set(map(id, cases))
    if spec:
        chosen = shard_mod.select([it.case.id for it in cases], shard_mod.parse(spec), _STATE.get("durations"))
        keep = {id(it) for it, k in zip(cases, chosen) if k}
        drop = [it for it in items if getattr(it, "case", None) is not None and id(it) not in keep]
        if drop:
            config.hook.pytest_deselected(items=drop)
            items[:] = [it for it in items if id(it) in keep or getattr(it, "case", None) is None]
    worker = getattr(config, "workerinput", {}).get("workerid")
    if props and worker in (None, "gw0"):       # every xdist worker selects the same; one writes it down
        entry = lambda it: {"case_id": it.case.id, "nodeid": it.nodeid, "op": it.case.op.name, "dtype": it.case.dtype}
        rec_mod.write_manifest(report_dir(config, props), [entry(it) for it in cases],
                               [entry(it) for it in cases if id(it) in keep],
                               shard_mod.parse(spec) if spec else None,
                               {"backend": config.getoption("backend"), "family": config.getoption("soc") or props.get("family")})


# ------------------------------------------------------------------ recording (xdist controller, or the only process)

def _is_controller(config) -> bool:
    return not hasattr(config, "workerinput")


def _recorder(config, props: dict) -> Recorder:
    recorder = config.stash.get(_RECORDER, None)
    if recorder is None:
        from ..backends.base import banner
        root = Path(str(config.rootpath))
        case_files = sorted({Path(str(a).split("::")[0]) for a in config.args if ".y" in str(a)} |
                            set((root / "cases").glob("*.yaml")))
        extra = {"shard": config.getoption("shard"), "reruns": config.getoption("reruns"),
                 "gate": config.getoption("gate"), "tier": config.getoption("tier")}
        argv = ["pytest", *config.invocation_params.args]
        recorder = config.stash[_RECORDER] = Recorder(report_dir(config, props), banner(props), props, root=root,
                                                      argv=argv, case_files=case_files, extra=extra,
                                                      html=not config.getoption("no_html"), started=_STATE.get("started"))
        _add_junit_properties(config, props)
    return recorder


def _add_junit_properties(config, properties: dict) -> None:
    try:
        from _pytest.junitxml import xml_key
    except ImportError:  # pragma: no cover - junitxml internals moved
        return
    xml = config.stash.get(xml_key, None)
    if xml is not None:
        for k, v in properties.items():
            xml.add_global_property(k, v)


def _one_line(report) -> str:
    lines = [ln for ln in str(report.longrepr or "").splitlines() if ln.strip()]
    return lines[-1][:500] if lines else "error"


def _crash_record(config, nodeid: str, props: dict) -> dict:
    """A worker that died (segfault, abort in the library) sends a bare report: its case CRASHed."""
    file_part, _, name = nodeid.partition("::")
    try:
        op = yaml.safe_load((Path(str(config.rootpath)) / file_part).read_text())["op"]
    except Exception:          # the record matters more than its op name
        op = Path(file_part).stem
    return {"case_id": f"{op}.{name}", "nodeid": nodeid, "op": op, "family": props.get("family", ""),
            "dtype": name.split("[", 1)[1].split("-", 1)[0] if "[" in name else None,
            "status": Status.CRASH.value, "raw_status": Status.CRASH.value, "attempts": [Status.CRASH.value],
            "backend": props, "repro": repro.command(nodeid, props, identity.switches(), Path(str(config.rootpath)))}


def pytest_runtest_logreport(report):
    """Record each case once: its record from the worker, or what stopped it."""
    config = _STATE.get("config")
    if config is None or not _is_controller(config):   # xdist workers forward reports; the controller records
        return
    props = dict(report.user_properties)
    known = config.stash.get(_RECORDER, None)
    base_props = known.properties if known else {}
    if "record" in props:
        if report.when != "call":                     # a setup/teardown report of a case already recorded
            return
        record = json.loads(props["record"])
        if report.failed and not is_gate_failure(record):
            record["status"] = record["raw_status"] = Status.FAIL.value          # raised after judging
            record["reason"] = record["error"] = _one_line(report)
    elif report.failed and ".yaml::" in report.nodeid and "case_id" not in props:
        record = _crash_record(config, report.nodeid, base_props)
        record["reason"] = record["error"] = _one_line(report)
    elif "case_id" in props and report.failed:                                    # raised before judging
        record = {"case_id": props["case_id"], "nodeid": report.nodeid, "op": props.get("op"),
                  "status": Status.FAIL.value, "raw_status": Status.FAIL.value, "reason": _one_line(report),
                  "backend": {k: v for k, v in props.items() if k not in ("case_id", "op")} or base_props}
    else:
        return
    _recorder(config, record.get("backend") or base_props).add(record)


def pytest_sessionfinish(session, exitstatus):
    config = session.config
    recorder = config.stash.get(_RECORDER, None)
    if recorder is None or not _is_controller(config):
        return
    gated = bool(config.getoption("gate"))
    recorder.finish(gated=gated)
    if gated and session.exitstatus in (0, 1):
        session.exitstatus = recorder.gate.exit_code
    elif any(r["status"] == Status.MISSING.value for r in recorder.records) and session.exitstatus == 0:
        session.exitstatus = 1


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    recorder = config.stash.get(_RECORDER, None)
    if recorder is None:
        return
    tr = terminalreporter
    tr.section("aclnn conformance summary")
    if recorder.gate:
        for line in recorder.gate.lines():
            tr.write_line(line)
    else:
        bad = [r for r in recorder.records if rec_mod.status_of(r).is_failure]
        for r in bad[:30]:
            tr.write_line(f"{r['status']:<8} {r['case_id']}: {r.get('reason', '')}"[:400])
            if r.get("repro"):
                tr.write_line(f"         repro: {r['repro']}")
        if len(bad) > 30:
            tr.write_line(f"... and {len(bad) - 30} more (results.jsonl, summary.md)")
    tr.write_line(recorder.banner)
    for line in recorder.table():
        tr.write_line(line)
    unexpected = [r for r in recorder.records if r["status"] == Status.UNEXPECTED_PASS.value]
    if unexpected:
        tr.write_line(f"{len(unexpected)} UNEXPECTED_PASS: a known deviation or baseline entry no longer fails "
                      "(summary.md lists them)")
    if recorder.notes:
        tr.write_line(f"{len(recorder.notes)} case(s) carry a note: a documented claim the code does not follow, "
                      "or a deviation they target (summary.json)")
    tr.write_line(f"reports: {recorder.dir} (results.jsonl, summary.md, junit.xml"
                  + (", report.html)" if recorder.html else ")"))
