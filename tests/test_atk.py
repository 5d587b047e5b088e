"""ATK case lists (harness/model/atk.py): every official case becomes a Case or a skip with its
reason; the JSON's forms are read as the spec describes them; malformed files are one line."""
from __future__ import annotations

import copy
import json
import os
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest
import torch

from harness import inputs
from harness.core.errors import CaseFileError
from harness.operators import load_atk_file
from harness.judge.runner import run_case
from harness.model import atk
from tests.test_runner import Tampering, _nudge

ROOT = Path(__file__).resolve().parents[1]
CASES = ROOT / "cases"
ATK_DIR = ROOT.parent / "shared" / "atk"
ATK_FILES = sorted(ATK_DIR.glob("*.json"))
needs_atk = pytest.mark.skipif(not ATK_FILES, reason=f"no ATK lists in {ATK_DIR}")


def _doc(name):
    return json.loads((ATK_DIR / f"{name}.json").read_text())


def _write(tmp_path, doc, name="MaxUnpool3dBackward.json"):
    p = tmp_path / name
    p.write_text(json.dumps(doc))
    return p


@needs_atk
@pytest.mark.parametrize("path", ATK_FILES, ids=lambda p: p.stem)
def test_every_atk_case_is_a_case_or_a_reasoned_skip(path):
    doc = json.loads(path.read_text())
    cases = load_atk_file(path, CASES)
    assert len(cases) == len(doc)                                 # nothing dropped
    assert len({c.name for c in cases}) == len(cases)
    for c in cases:
        assert c.op.name == doc[0]["aclnn_name"]
        assert c.skip is None or c.skip.startswith("ATK case ")
    runnable = [c for c in cases if not c.skip]
    assert len(runnable) >= len(doc) * 0.8, Counter(c.skip for c in cases if c.skip)


@needs_atk
def test_a_case_file_atk_deviation_marks_only_its_families_and_dtypes():
    """AdaptiveMaxPool2d's case file declares the 950 kernel's tensor-dtype accumulation for its
    ATK cases: an expected failure on 950 for fp16/bf16, a plain case elsewhere."""
    op = "AdaptiveMaxPool2dBackward"
    cases = [c for c in load_atk_file(ATK_DIR / f"{op}.json", CASES) if not c.skip]
    half = next(c for c in cases if c.dtype == "float16")
    fp32 = next(c for c in cases if c.dtype == "float32")
    assert "tensor dtype" in half.deviation_on("aclnn", "ascend950").reason
    assert half.deviation_on("aclnn", "ascend910b") is None and half.deviation_on("aclnn") is None
    assert fp32.deviation_on("aclnn", "ascend950") is None
    assert half.deviation_on("torch", "ascend910b") is not None        # torch's own, every family


@needs_atk
def test_standards_follow_the_standard_field():
    want = {"MaxPool2dWithIndicesBackward": "single_bm_high_performance", "MaxPool3dWithArgmaxBackward": "mere_mare",
            "AdaptiveMaxPool2dBackward": "single_bm_high_precision", "AvgPool2dBackward": "single_bm_high_precision",
            "MaxUnpool3dBackward": "bit_exact"}
    for op, std in want.items():
        cases = [c for c in load_atk_file(ATK_DIR / f"{op}.json", CASES) if not c.skip]
        assert {c.standard for c in cases} == {std}, op
    assert atk.standard_of({"single_bm": {}}) == "single_bm_high_precision"     # ATK's default type
    assert atk.standard_of({"single_bm": {"type": "vector_fused"}}) is None


def test_range_values_forms(tmp_path):
    rd = atk._Reader("f#1", {})
    nd = rd.distribution("self", {"name": "nd", "mean": [-100, 100], "std": [1, 25]})
    assert nd.kind == "normal" and -100 <= nd.params["mean"] <= 100 and 1 <= nd.params["std"] <= 25
    assert rd.distribution("self", {"name": "nd", "mean": [-100, 100], "std": [1, 25]}).params == nd.params
    assert atk._Reader("f#2", {}).distribution("self", {"name": "nd", "mean": [-100, 100],
                                                        "std": [1, 25]}).params != nd.params
    assert rd.distribution("x", ["-inf"]).params["value"] == float("-inf")
    assert rd.distribution("x", 0).kind == "constant"
    full = rd.distribution("x", ["-inf", "inf"])
    t = inputs.values.draw_tensor(full, "id", "x", (4096,), torch.int8)
    assert int(t.min()) == -128 and int(t.max()) == 127                    # the whole dtype range
    t64 = inputs.values.draw_tensor(full, "id", "x", (64,), torch.int64)
    assert t64.abs().max() > 2**62                                        # exact 64-bit draws, no float detour
    assert torch.isfinite(inputs.values.draw_tensor(full, "id", "x", (64,), torch.float16)).all()
    with pytest.raises(atk._Skip, match="range_values"):
        rd.distribution("x", ["null"])
    assert rd.attr_value("stride[0]", [1]) == 1
    v = rd.attr_value("stride[1]", [1, 100])
    assert 1 <= v <= 100 and any("stride[1] range [1, 100] sampled" in n for n in rd.notes)


@needs_atk
def test_unpool_inputs_are_drawn_as_the_json_says():
    doc = _doc("MaxUnpool3dBackward")
    raw = next(c for c in doc if c["inputs"][2]["range_values"][1] > 0)
    case = next(c for c in load_atk_file(ATK_DIR / "MaxUnpool3dBackward.json", CASES)
                if c.name.startswith(f"atk[{raw['id']}-"))
    got = inputs.prepare(case)
    for i, name in enumerate(("gradOutput", "self", "indices")):
        assert list(got[name].shape) == raw["inputs"][i]["shape"]
    lo, hi = raw["inputs"][2]["range_values"]
    assert got["indices"].dtype == torch.int64 and lo <= int(got["indices"].min()) and int(got["indices"].max()) <= hi


@needs_atk
def test_maxpool_indices_come_from_the_forward_not_the_placeholder():
    case = next(c for c in load_atk_file(ATK_DIR / "MaxPool2dWithIndicesBackward.json", CASES) if not c.skip)
    assert case.index_dtype == "int32" and set(case.formats.values()) == {"NCHW"}
    got = inputs.prepare(case)
    assert got["indices"].shape == got["gradOutput"].shape                 # placeholder had e.g. shape [1, 15]


@needs_atk
def test_an_atk_case_is_judged_like_any_case():
    case = next(c for c in load_atk_file(ATK_DIR / "MaxPool2dWithIndicesBackward.json", CASES)
                if not c.skip and c.tier == "default")
    assert run_case(case, Tampering(), "ascend910b").raw.value == "PASS"
    assert run_case(case, Tampering(_nudge), "ascend910b").raw.value == "FAIL"


@needs_atk
def test_unfaithful_cases_are_skipped_with_their_reason(tmp_path):
    doc = _doc("MaxUnpool3dBackward")[:4]
    bad = copy.deepcopy(doc)
    bad[0]["standard"] = {"acc": "ratio", "perf": "not_key"}
    bad[1]["inputs"][0]["range_values"] = ["null"]
    bad[2]["inputs"][0]["dtype"] = "fp8"
    del bad[3]["inputs"][3]
    cases = load_atk_file(_write(tmp_path, bad), CASES)
    reasons = [c.skip for c in cases]
    assert "standard.acc 'ratio'" in reasons[0]
    assert "range_values ['null']" in reasons[1]
    assert "unknown dtype 'fp8'" in reasons[2]
    assert "no value for outputSize" in reasons[3]
    assert all(r.startswith(f"ATK case {c.name[4:-1]} of MaxUnpool3dBackward.json: ") for c, r in zip(cases, reasons))
    out = run_case(cases[0], Tampering(), "ascend910b")
    assert out.raw.value == "SKIP" and out.reason == cases[0].skip


@needs_atk
def test_an_atk_perf_ratio_reaches_the_record_and_the_perf_gate(tmp_path):
    """ATK's standard.perf, where it is a ratio against the benchmark device, is a fact of the case's
    record, which is where the perf gate reads it (perf_gate.atk_ratio); "not_key" (every case of the
    shipped lists) is not. It used to be read by the gate and written by nothing."""
    from harness.reporting import records as rec_mod
    from harness.reporting.perf import gate as perf_gate
    doc = _doc("MaxUnpool3dBackward")[:3]
    doc[0]["standard"]["perf"] = [0.95, 0.9]
    doc[1]["standard"]["perf"] = 0.8
    cases = load_atk_file(_write(tmp_path, doc), CASES)
    facts = [rec_mod.facts_of(c, f"x::{c.name}") for c in cases]
    assert [f.get("atk_perf") for f in facts] == [[0.95, 0.9], 0.8, None]
    assert [perf_gate.atk_ratio(f.get("atk_perf")) for f in facts] == [0.95, 0.8, None]


@pytest.mark.parametrize("text,words", [
    ("[{\"id\": 0", "not valid JSON at line 1"),
    ("{\"id\": 0}", "JSON list of case objects"),
    ("[{\"id\": 0, \"aclnn_name\": \"A\"}, {\"id\": 1, \"aclnn_name\": \"B\"}]", "one file holds one operator"),
    ("[{\"id\": 0, \"aclnn_name\": \"Conv2d\"}]", "no readable case file"),
])
def test_malformed_file_is_one_line(tmp_path, text, words):
    p = tmp_path / "x.json"
    p.write_text(text)
    with pytest.raises(CaseFileError) as e:
        load_atk_file(p, CASES)
    assert words in str(e.value) and str(p) in str(e.value) and "\n" not in str(e.value)


@needs_atk
def test_pytest_collects_atk_files_by_option_and_by_directory(tmp_path):
    small = tmp_path / "atk"
    small.mkdir()
    (small / "MaxUnpool3dBackward.json").write_text(json.dumps(_doc("MaxUnpool3dBackward")[:3]))
    for args in ([f"--atk={small / 'MaxUnpool3dBackward.json'}"], ["-p", "harness.plugin", str(small)]):
        r = subprocess.run([sys.executable, "-m", "pytest", "-q", "-n", "0", "-p", "no:cacheprovider",
                            "--report-dir", str(tmp_path / "rep"), *args], cwd=ROOT, capture_output=True, text=True)
        assert r.returncode == 0 and "3 passed" in r.stdout, r.stdout[-2000:] + r.stderr[-2000:]


@needs_atk
def test_a_failing_atk_case_outside_the_checkout_has_a_repro_line_that_reruns_it(tmp_path):
    """An ATK list beside the checkout (or anywhere else) once gave records the node id
    '::atk[2-...]' and a repro line pytest could not run; the node id is now the list's path, and the
    repro line (with --atk, since the list is no atk/ directory) reruns that one case."""
    mine = tmp_path / "mylist.json"
    mine.write_text(json.dumps(_doc("MaxUnpool3dBackward")[:3]))
    env = {**os.environ, "SWCANN_FAULTS": "unpool_hw_swap"}
    r = subprocess.run([sys.executable, "-m", "pytest", "-q", "-n", "0", "-p", "no:cacheprovider", f"--atk={mine}",
                        "--backend", "aclnn", "--soc", "ascend910b", f"--report-dir={tmp_path / 'rep'}"],
                       cwd=ROOT, capture_output=True, text=True, env=env, timeout=300)
    records = [json.loads(x) for x in (tmp_path / "rep" / "results.jsonl").read_text().splitlines()]
    failed = [rec for rec in records if rec["status"] == "FAIL"]
    assert failed, r.stdout[-2000:] + r.stderr[-2000:]
    assert failed[0]["nodeid"] == f"{mine}::{failed[0]['case_id'].split('.', 1)[1]}", failed[0]["nodeid"]
    assert f"--atk={mine}" in failed[0]["repro"], failed[0]["repro"]
    again = subprocess.run(["bash", "-c", failed[0]["repro"] + f" --report-dir={tmp_path / 'rep2'}"], cwd=ROOT,
                           capture_output=True, text=True, env=env, timeout=300)
    assert "1 failed" in again.stdout, again.stdout[-2000:] + again.stderr[-2000:]
