"""Malformed case files: each mistake is one line naming file, group and field."""
from __future__ import annotations

import copy
import subprocess
import sys

import pytest
import yaml

from harness.judge import load_case_file as load
from harness.errors import CaseFileError

BASE = {
    "op": "MaxPool2dWithIndicesBackward",
    "golden": "max_pool2d_with_indices_backward",
    "standard": "single_bm_high_performance",
    "families": ["ascend910b", "ascend950"],
    "output_like": "self",
    "signature": [
        {"name": "gradOutput", "type": "tensor", "dtype": "data"},
        {"name": "self", "type": "tensor", "dtype": "data"},
        {"name": "indices", "type": "tensor", "dtype": "index"},
        {"name": "kernelSize", "type": "int_array"},
        {"name": "stride", "type": "int_array"},
        {"name": "padding", "type": "int_array"},
        {"name": "dilation", "type": "int_array"},
        {"name": "ceilMode", "type": "bool"},
        {"name": "gradInput", "type": "tensor", "dtype": "data", "output": True},
    ],
    "checks": [{"id": "B1", "what": "gradOutput != null", "status": 161001}],
    "groups": [
        {"name": "basic", "matrix": {
            "shape": [[1, 2, 4, 4]], "dtype": ["float32"], "index_dtype": ["int32"], "format": ["NCHW"],
            "attrs": [{"kernelSize": [2, 2], "stride": [2, 2], "padding": [0, 0], "dilation": [1, 1], "ceilMode": False}]}},
        {"name": "bad_args", "invalid": {
            "base": {"shape": [1, 1, 4, 4], "dtype": "float32", "index_dtype": "int32", "format": "NCHW",
                     "attrs": {"kernelSize": [2, 2], "stride": [2, 2], "padding": [0, 0], "dilation": [1, 1], "ceilMode": False}},
            "scenarios": [{"check": "B1", "null": "gradOutput", "status": 161001}]}},
    ],
}


def _write(tmp_path, doc, text=None):
    path = tmp_path / "case.yaml"
    path.write_text(text if text is not None else yaml.safe_dump(doc, sort_keys=False))
    return path


def _matrix(doc):
    return doc["groups"][0]["matrix"]


def _scenario(doc):
    return doc["groups"][1]["invalid"]["scenarios"][0]


def test_base_document_is_valid(tmp_path):
    op, cases = load(_write(tmp_path, BASE))
    assert op.name == "MaxPool2dWithIndicesBackward" and len(cases) == 2


# (id, mutation of the document, expected group, expected field, words the message must contain)
MISTAKES = [
    ("unknown-dtype", lambda d: _matrix(d).update(dtype=["float33"]), "basic", "matrix.dtype", "unknown dtype 'float33'"),
    ("unknown-index-dtype", lambda d: _matrix(d).update(index_dtype=["int23"]), "basic", "matrix.index_dtype", "int23"),
    ("unknown-family", lambda d: d["groups"][0].update(families=["ascend999"]), "basic", "families", "ascend999"),
    ("unknown-golden", lambda d: d.update(golden="no_such_golden"), None, "golden", "no_such_golden"),
    ("attr-not-in-signature", lambda d: _matrix(d)["attrs"][0].update(groups=2), "basic", "matrix.attrs.0.groups", "unknown attribute"),
    ("missing-attr", lambda d: _matrix(d)["attrs"][0].pop("ceilMode"), "basic", "matrix.attrs.0.ceilMode", "missing attribute"),
    ("attr-wrong-type", lambda d: _matrix(d)["attrs"][0].update(kernelSize=3), "basic", "matrix.attrs.0.kernelSize", "list of integers"),
    ("bool-attr-wrong-type", lambda d: _matrix(d)["attrs"][0].update(ceilMode="yes"), "basic", "matrix.attrs.0.ceilMode", "must be bool"),
    ("unknown-standard", lambda d: d.update(standard="close_enough"), None, "standard", "close_enough"),
    ("unknown-format", lambda d: _matrix(d).update(format=["NCWH"]), "basic", "matrix.format.0", "unknown format 'NCWH'"),
    ("unknown-layout", lambda d: _matrix(d).update(layout=["zigzag"]), "basic", "matrix.layout.0", "zigzag"),
    ("layout-for-unknown-tensor", lambda d: _matrix(d).update(layout=[{"default": "strided", "weights": "contiguous"}]), "basic", "matrix.layout.0", "layout given for unknown tensor"),
    ("unknown-distribution", lambda d: _matrix(d).update(values=["gaussian"]), "basic", "matrix.values", "unknown distribution 'gaussian'"),
    ("negative-dim", lambda d: _matrix(d).update(shape=[[1, -2, 4, 4]]), "basic", "matrix.shape.0", "negative dimension"),
    ("duplicate-case", lambda d: _matrix(d).update(dtype=["float32", "fp32"]), "basic", None, "duplicate case id"),
    ("duplicate-group", lambda d: d["groups"].append(copy.deepcopy(d["groups"][0])), "basic", "name", "duplicate group"),
    ("matrix-and-invalid", lambda d: d["groups"][0].update(invalid=d["groups"][1]["invalid"]), "basic", None, "exactly one of 'matrix' or 'invalid'"),
    ("typo-top-level-key", lambda d: d.update(grups=[]), None, None, "grups"),
    ("missing-top-level-key", lambda d: d.pop("signature"), None, None, "'signature' is a required property"),
    ("null-on-scalar", lambda d: _scenario(d).update(null="ceilMode"), "bad_args", "invalid.scenarios.0.null", "not a tensor or int_array"),
    ("status-missing-family", lambda d: _scenario(d).update(status={"ascend910b": 161001}), "bad_args", "invalid.scenarios.0.status", "ascend950"),
    ("status-not-int", lambda d: _scenario(d).update(status="161001"), "bad_args", "invalid.scenarios.0.status", "161001"),
    ("undeclared-check", lambda d: _scenario(d).update(check="B99"), "bad_args", "invalid.scenarios.0.check", "B99"),
    ("unknown-tensor-in-scenario", lambda d: _scenario(d).update(tensors={"weights": {"dtype": "float16"}}), "bad_args", "invalid.scenarios.0.tensors", "weights"),
    ("bad-distribution-def", lambda d: d.update(distributions={"wide": {"kind": "uniform", "low": 5, "high": -5}}), None, "distributions.wide", "low 5 > high -5"),
    ("int8-attr-out-of-range", None, None, None, None),  # placeholder replaced below for the AvgPool signature
]
MISTAKES = [m for m in MISTAKES if m[1] is not None]


@pytest.mark.parametrize("mutate,group,field,words", [m[1:] for m in MISTAKES], ids=[m[0] for m in MISTAKES])
def test_mistake_is_one_line_naming_file_group_field(tmp_path, mutate, group, field, words):
    doc = copy.deepcopy(BASE)
    mutate(doc)
    path = _write(tmp_path, doc)
    with pytest.raises(CaseFileError) as info:
        load(path)
    err = info.value
    text = str(err)
    assert "\n" not in text
    assert str(path) in text
    assert words in text, text
    assert err.group == group, text
    assert err.field == field, text


def test_yaml_syntax_error_names_line(tmp_path):
    path = _write(tmp_path, None, "op: X\ngroups: [\n  - {name: a\n")
    with pytest.raises(CaseFileError) as info:
        load(path)
    text = str(info.value)
    assert "\n" not in text and str(path) in text and "not valid YAML at line" in text


def test_top_level_not_a_mapping(tmp_path):
    with pytest.raises(CaseFileError, match="top level must be a mapping"):
        load(_write(tmp_path, None, "- 1\n- 2\n"))


def test_bad_file_does_not_stop_the_others(tmp_path):
    """A broken case file is one failed item; cases of the other files still run and are recorded."""
    cases = tmp_path / "cases"
    cases.mkdir()
    (cases / "good.yaml").write_text(yaml.safe_dump(BASE, sort_keys=False))
    (cases / "broken.yaml").write_text("op: [unclosed\n")
    proc = subprocess.run([sys.executable, "-m", "pytest", "-p", "harness.plugin", str(cases), "-q",
                           "--rootdir", str(tmp_path), "-c", "/dev/null", "--report-dir", str(tmp_path / "rep")],
                          capture_output=True, text=True, timeout=300)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 1, out
    assert "1 failed, 1 passed, 1 skipped" in out, out     # the invalid case has no torch equivalent
    assert "broken.yaml: not valid YAML at line 2" in out, out
    results = (tmp_path / "rep" / "results.jsonl").read_text().splitlines()
    assert len(results) == 3, results
