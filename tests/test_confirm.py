"""`triage --confirm` (harness/explore/confirm.py): each cause tested by running new cases inside and
outside its predicate on the run's library, and one failure per cause shrunk to a minimal YAML group
and C reproducer. A real faulty run of the software CANN (tail_unwritten: the last partial 32-byte
block of gradInput is never stored) is confirmed; a predicate that matches exactly the same records
of the run but is not the bug (`W=9`) is refuted by the experiment; a process whose library is not
the run's is refused in one line; the confirmation shows under its cause in report.html as headless
Chromium renders it."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from html.parser import HTMLParser
from pathlib import Path

import pytest

from harness import operators
from harness.explore import confirm, facts as facts_mod, neighbours
from harness.explore.oracle import Oracle
from tests import swenv
from tests.test_nightly_sweep import chromium_or_skip

ROOT = Path(__file__).resolve().parents[1]
FAMILY = "ascend910b"
FAULT = "tail_unwritten"
TIER = ["cases/max_pool2d_with_indices_backward.yaml", "-k", "fp32_windows"]


def _env(**extra) -> dict:
    env = dict(swenv.bare_env(), SWCANN_SOC=FAMILY, **extra)
    return env


@pytest.fixture(scope="module")
def faulty_run(tmp_path_factory):
    """The tier on the faulty library, then `triage --confirm` on it in the same environment."""
    report = tmp_path_factory.mktemp("confirm") / "run"
    env = _env(SWCANN_FAULTS=FAULT)
    proc = subprocess.run([sys.executable, "-m", "pytest", *TIER, "--backend", "aclnn", "--soc", FAMILY, "-q", "-n", "0",
                           "--report-dir", str(report), "-p", "no:cacheprovider"],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    assert (report / "results.jsonl").exists(), proc.stdout[-2000:] + proc.stderr[-2000:]
    out = report / "causes.json"
    cli = subprocess.run([sys.executable, "-m", "harness.reporting", "triage", str(report), "--confirm",
                          "--confirm-cases", "6", "--json", str(out)],
                         cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    assert cli.returncode == 0, cli.stdout[-3000:] + cli.stderr[-3000:]
    return report, json.loads(out.read_text()), cli.stdout


def test_the_bugs_cause_is_confirmed_and_shrunk_to_a_minimal_case(faulty_run):
    report, doc, printed = faulty_run
    cause = doc["causes"][0]
    assert cause["predicate"] == ["bytes mod 32 ≠ 0"], cause["predicate"]
    c = doc["confirmations"][0]
    assert c["verdict"] == "confirmed", c
    assert c["inside"] == "6/6" and c["outside"] == "6/6", c
    # the outside cases are near misses: each breaks the one atom, nothing else
    assert all(t["broken"] == "bytes mod 32 ≠ 0" for t in c["trials"] if t["side"] == "outside")
    assert {t["family"] for t in c["trials"]} == {FAMILY}           # the run held one family: so do they
    m = c["minimal"]
    assert m["minimal"] and m["reproduced"], m
    assert "-1x1x1x1-" in m["case_id"], m                          # one element: 4 bytes, a partial block
    assert Path(m["c_repro"], "repro.c").is_file() and Path(m["yaml"]).is_file()
    assert "cause 1 — confirmed: inside 6/6 failed as predicted, outside 6/6 did not" in printed
    assert "**confirmed** by experiment" in (report / "summary.md").read_text()
    saved = json.loads((report / "confirm" / "confirm.json").read_text())
    assert saved[0]["predicate"] == "bytes mod 32 ≠ 0"


def test_a_predicate_equivalent_on_the_run_but_wrong_is_refuted_and_the_right_one_kept(faulty_run, tmp_path):
    """`W=9` matches exactly the run's failures (every failing case is 2x3x9x9, and so is no passing
    one): only new cases tell it from the bug. Put first, with the bug's own predicate as the one
    equivalent left, the experiment refutes it and confirms the other. Run in a process of its own,
    as the CLI runs it."""
    report, _doc, _printed = faulty_run
    script = f"""
import json, sys
from pathlib import Path
from harness.explore import confirm
from harness.reporting.runs import load_run
from harness.triage import triage
confirm.prepare()
run = load_run(Path({str(report)!r}))
t = triage(run.records)
c = t.causes[0]
assert "W=9" in c.equivalents, c.equivalents
right = c.terms
c.predicate, c.terms, c.alternatives = ["W=9"], [{{"feature": "W", "value": "9"}}], [right]
done = confirm.confirm(run.records, t, {{run.identity["family"]: run.identity}}, cases_dir=Path("cases"), root=Path("."),
                       out_dir=Path({str(tmp_path)!r}), argv=["test"], per_side=6, log=lambda line: None)
print(json.dumps(done[0].to_dict()))
"""
    proc = subprocess.run([sys.executable, "-c", script], cwd=ROOT, env=_env(SWCANN_FAULTS=FAULT),
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-3000:]
    c = json.loads(proc.stdout.strip().splitlines()[-1])
    wrong, right = c["tried"]
    assert (wrong["predicate"], wrong["verdict"]) == ("W=9", "refuted"), wrong
    assert "inside but not failing so" in wrong["why"] or "outside but failing so" in wrong["why"], wrong
    assert (right["predicate"], right["verdict"]) == ("bytes mod 32 ≠ 0", "confirmed"), right
    assert c["verdict"] == "confirmed" and c["confirmed_as"] == "bytes mod 32 ≠ 0", c


def test_a_process_on_another_library_is_refused_in_one_line(faulty_run):
    report, _doc, _printed = faulty_run
    proc = subprocess.run([sys.executable, "-m", "harness.reporting", "triage", str(report), "--confirm"],
                          cwd=ROOT, env=_env(), capture_output=True, text=True, timeout=600)
    assert proc.returncode == 4, proc.stdout[-2000:] + proc.stderr[-2000:]
    err = [line for line in proc.stderr.splitlines() if line.strip() and not line.startswith("*** software CANN")]
    assert len(err) == 1 and err[0].startswith("ERROR:") and "SWCANN_FAULTS=tail_unwritten" in err[0], proc.stderr
    assert "Causes:" not in proc.stdout          # refused before any work


@pytest.mark.parametrize("identity, says", [
    ({"backend": "torch"}, "the run used 'torch'"),
    ({"backend": "aclnn", "library_sha256": {"/x/lib64/libopapi_nn.so": "0" * 64}}, "libopapi_nn.so"),
    ({"backend": "aclnn", "switches": {"SWCANN_DEVIATIONS": "1"}}, "SWCANN_DEVIATIONS=1"),
])
def test_check_library_names_what_differs(identity, says, monkeypatch, tmp_path):
    lib = tmp_path / "lib64" / "libopapi_nn.so"
    lib.parent.mkdir()
    lib.write_bytes(b"another library")
    monkeypatch.setattr(confirm.identity, "library_paths", lambda target: {"opapi": str(lib)})
    with pytest.raises(confirm.ConfirmError, match=says.replace("(", r"\(")):
        confirm.check_library(identity, {}, {})
    confirm.check_library({"backend": "aclnn"}, {}, {})           # nothing recorded to differ: accepted


@pytest.mark.parametrize("case_id, family", [
    ("MaxPool2dWithIndicesBackward.fp32_windows[float32-int32-2x3x9x9-ks3x3_s2x2_p1x1_d1x1_cm1-NCHW-strided-uniform]",
     "ascend910b"),
    ("MaxPool3dWithArgmaxBackward.bad_params[B15]", "ascend910b"),
])
def test_a_case_becomes_an_example_that_plans_the_same_call(case_id, family):
    path = ROOT / "cases" / ("max_pool2d_with_indices_backward.yaml" if "2d" in case_id else
                             "max_pool3d_with_argmax_backward.yaml")
    facts = facts_mod.load(str(path))
    case = next(c for c in facts.cases if c.id == case_id)
    plan = Oracle(facts).plan(neighbours.example_of(case, family, facts))
    got = plan.case
    assert got is not None, plan.skip
    assert (got.kind, got.shape, got.dtype, got.index_dtype, got.formats, got.layouts, got.attrs) == \
        (case.kind, tuple(case.shape), case.dtype, case.index_dtype, case.formats, case.layouts, case.attrs)
    assert got.status[family] == case.status[family] and got.check == case.check
    assert got.values.name == case.values.name


class _Causes(HTMLParser):
    """The causes section as the browser built it: section order, causes, confirmations."""

    def __init__(self):
        super().__init__()
        self.sections, self.confirmations, self.predicates, self.yaml = [], [], [], ""
        self._in = None

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "section":
            self.sections.append(a.get("id"))
        if tag == "div" and "confirmation" in (a.get("class") or ""):
            self.confirmations.append(a.get("data-verdict"))
        if tag == "code" and a.get("class") == "predicate":
            self._in = "predicate"
        if tag == "pre" and a.get("class") == "minimal-yaml":
            self._in = "yaml"

    def handle_endtag(self, tag):
        if tag in ("code", "pre"):
            self._in = None

    def handle_data(self, data):
        if self._in == "predicate":
            self.predicates.append(data)
        elif self._in == "yaml":
            self.yaml += data


def test_chromium_shows_the_causes_first_with_their_confirmation(faulty_run, tmp_path):
    browser = chromium_or_skip()
    report, _doc, _printed = faulty_run
    flags = ["--headless", "--no-sandbox", "--disable-gpu", f"--user-data-dir={tmp_path / 'profile'}"]
    dom = subprocess.run([browser, *flags, "--dump-dom", (report / "report.html").as_uri()], capture_output=True,
                         text=True, timeout=120)
    assert dom.returncode == 0 and "<section" in dom.stdout, dom.stderr[-2000:]
    seen = _Causes()
    seen.feed(dom.stdout)
    assert "causes" in seen.sections and "failures" in seen.sections
    assert seen.sections.index("causes") < seen.sections.index("failures")
    assert seen.predicates == ["bytes mod 32 ≠ 0"] and seen.confirmations == ["confirmed"]
    assert "shape:" in seen.yaml and "[1, 1, 1, 1]" in seen.yaml
