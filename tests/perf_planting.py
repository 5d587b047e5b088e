"""A slower kernel planted by hand in a copy of the software CANN, for the perf gate to find.

`planted_root(directory, percent)` copies swcann/ under `directory`, makes MaxUnpool3d's kernel
do its work on the first `percent` % of its (n, c) planes a second time (both of its passes, the
index check and the gather; the same values written again, so the result is unchanged) and
builds the copy; it returns the install root, which a run uses through ASCEND_HOME_PATH. On the
cases of PLANES planes, 30 % is 15 planes more (1.31x the kernel's per-plane work) and 5 % is 2
(1.04x); what the launch adds besides (the job's set-up) makes the measured ratio a little lower.
"""
from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

from tests import swenv

REPO = Path(__file__).resolve().parent.parent
OP = "MaxUnpool3dBackward"
SOURCE = "swcann/src/ops/max_unpool3d_backward.c"
PLANES = 49       # N x C of the cases below (7 x 7)
# MaxUnpool3d's 7x7x3x7x13 fp32 and fp16 cases, contiguous (the planted kernel is slower on each)
SELECT = "max_unpool3d and cov_tiles and 7x7x3x7x13 and ND-contiguous-uniform and (float32 or float16)"

_ANCHOR = "    free(seen);\n    return ACLNN_SUCCESS;\n}"
_PLANT = """    /* planted (tests/perf_planting.py): the kernel's work on the first PLANTED_PERCENT % of the
     * planes done again, both of its passes: the index check, then the gather */
    for (int64_t p = 0; p < (N * C * PLANTED_PERCENT + 50) / 100; p++) {
        int64_t n = p / C, c = p % C, outside = 0;
        for (int64_t d = 0; d < out.n[2]; d++)
            for (int64_t y = 0; y < out.n[3]; y++)
                for (int64_t x = 0; x < out.n[4]; x++) {
                    int64_t v = ld_i(&ix, lt_at(&ix, n, c, d, y, x));
                    outside += v < 0 || v >= OV;
                }
        if (outside) return ACLNN_SUCCESS;      /* never: the check above passed */
        for (int64_t d = 0; d < out.n[2]; d++)
            for (int64_t y = 0; y < out.n[3]; y++)
                for (int64_t x = 0; x < out.n[4]; x++) {
                    int64_t v = ld_i(&ix, lt_at(&ix, n, c, d, y, x));
                    int64_t od = v / (gh * gw), rem = v % (gh * gw);
                    memcpy(out.data + lt_at(&out, n, c, d, y, x) * (int64_t)es,
                           go.data + lt_at(&go, n, c, od, rem / gw, rem % gw) * (int64_t)es, es);
                }
    }
"""


def planted_source(text: str, percent: int) -> str:
    """The op's C source with the extra gather planted (AssertionError when the kernel changed)."""
    assert text.count(_ANCHOR) == 1, f"{SOURCE}: the end of unpool_kernel is not where the planting expects it"
    text = text.replace(_ANCHOR, _PLANT + _ANCHOR)
    return text.replace('#define API "aclnnMaxUnpool3dBackward"',
                        f'#define API "aclnnMaxUnpool3dBackward"\n#define PLANTED_PERCENT {int(percent)}', 1)


def planted_root(directory: Path, percent: int) -> Path:
    """Build the copy with the planted kernel; its install root."""
    directory = Path(directory)
    if directory.exists():
        shutil.rmtree(directory)
    shutil.copytree(REPO / "swcann", directory / "swcann", ignore=shutil.ignore_patterns("__pycache__"))
    src = directory / SOURCE
    src.write_text(planted_source(src.read_text(), percent))
    done = subprocess.run([sys.executable, "-m", "swcann.build"], cwd=directory, capture_output=True, text=True,
                          timeout=600, env=swenv.bare_env())
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-3000:]
    return Path(done.stdout.strip().splitlines()[-1])


def suite(report_dir: Path, *args, root: Path | None = None, select: str = SELECT, soc: str = "ascend910b",
          timeout: float = 600) -> subprocess.CompletedProcess:
    """A suite run from this checkout in a fresh shell: on the library at `root` (ASCEND_HOME_PATH),
    else on the checkout's own software CANN."""
    env = swenv.bare_env()
    if root is not None:
        env["ASCEND_HOME_PATH"] = str(root)
    cmd = [sys.executable, "-m", "pytest", "cases/", "--backend", "aclnn", "-n", "0", "-q", "-p", "no:cacheprovider",
           "--soc", soc, "--report-dir", str(report_dir), "--no-html", "-k", select, *args]
    return subprocess.run(cmd, cwd=REPO, env={**env, "PYTHONDONTWRITEBYTECODE": "1"}, capture_output=True,
                          text=True, timeout=timeout)
