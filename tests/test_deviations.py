"""Policy 4: the cases that target a known implementation deviation really expose it.

The software CANN can reproduce the documented deviations (SWCANN_DEVIATIONS=1).
Every `dev_*` case must pass on the documented semantics and fail on the
deviating library: a deviation case that passes either way guards nothing.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _run(tmp_path, soc: str, deviations: bool) -> dict[str, str]:
    env = dict(os.environ, SWCANN_SOC=soc)
    env.pop("ASCEND_HOME_PATH", None)
    if deviations:
        env["SWCANN_DEVIATIONS"] = "1"
    else:
        env.pop("SWCANN_DEVIATIONS", None)
    report = tmp_path / f"{soc}-{int(deviations)}"
    subprocess.run([sys.executable, "-m", "pytest", "cases/avg_pool2d_backward.yaml", "--backend", "aclnn",
                    "--soc", soc, "-q", "-k", "dev_", "--report-dir", str(report), "-p", "no:cacheprovider"],
                   cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    records = [json.loads(x) for x in (report / "results.jsonl").read_text().splitlines()]
    return {r["case_id"]: r["outcome"] for r in records}


@pytest.mark.parametrize("soc", ["ascend910b", "ascend910"])
def test_deviation_cases_pass_on_documented_semantics_and_fail_on_the_deviation(tmp_path, soc):
    documented = _run(tmp_path, soc, deviations=False)
    deviating = _run(tmp_path, soc, deviations=True)
    assert documented and set(documented) == set(deviating)
    assert set(documented.values()) == {"passed"}, documented
    missed = sorted(c for c, o in deviating.items() if o != "failed")
    assert not missed, f"deviation cases that do not expose their deviation: {missed}"
