"""A slower kernel planted by hand in a copy of the software CANN, for the perf gate to find.

`planted_root(directory, planes)` copies swcann/ under `directory`, makes MaxUnpool3d's kernel
do its work on its first `planes` (n, c) planes a second time (both of its passes, the index
check and the gather; the same values written again, so the result is unchanged) and builds the
copy; it returns the install root, which a run uses through ASCEND_HOME_PATH.

Each plane done again is also counted in the kernel's bytes (`job_traffic`), as the kernel
counts a plane of its own: its index, the gradient gathered and the element written per output
element (swcann/README.md, "Device time": the byte model; the index check is in no plane's count,
the kernel's own neither). So under SWCANN_DEVICE_TIME=1 a launch moves exactly
(PLANES + planes) / PLANES of the 0-plane copy's bytes and its modelled time grows by that share:
SLOW 64/49 = 1.306x, SLIGHT 50/49 = 1.020x, in every run however busy the machine
(tests/test_perf_mode.py). Without the model the counter is one addition per plane and the
launch is timed as the kernels' CPU time (benchmarks/bench_perf_gate.py).

The baseline of a comparison is the copy planted with 0 planes: the same code, so the only
difference the gate sees is the work. (Against the checkout's own library a planted copy also
differs in its code's layout, and that alone moved some cases by several per cent.) Measured as
CPU time on the cases of PLANES planes (benchmarks/bench_perf_gate.py): SLOW planes are
1.29-1.38x the launch; SLIGHT (one plane) 1.00-1.08x, about 1.04x (1.33-1.45x beside other load,
why the test runs on the model). Two planes, once taken for "5 %", were 1.10-1.14x on the fp32
cases: the repeated gather costs more than a plane of the kernel's own loop.
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
SLOW, SLIGHT = 15, 1        # planes done again: 64/49 and 50/49 the modelled launch (CPU time: ~1.3x, ~1.04x)
# MaxUnpool3d's 7x7x3x7x13 fp32 and fp16 cases, contiguous (the planted kernel is slower on each)
SELECT = "max_unpool3d and cov_tiles and 7x7x3x7x13 and ND-contiguous-uniform and (float32 or float16)"

_ANCHOR = "    free(seen);\n    return ACLNN_SUCCESS;\n}"
_PLANT = """    /* planted (tests/perf_planting.py): the kernel's work on the first PLANTED_PLANES planes
     * done again, both of its passes: the index check, then the gather */
    for (int64_t p = 0; p < PLANTED_PLANES && p < N * C; p++) {
        int64_t n = p / C, c = p % C, outside = 0;
        for (int64_t d = 0; d < out.n[2]; d++)
            for (int64_t y = 0; y < out.n[3]; y++)
                for (int64_t x = 0; x < out.n[4]; x++) {
                    int64_t v = ld_i(&ix, lt_at(&ix, n, c, d, y, x));
                    outside += v < 0 || v >= OV;
                }
        if (outside) return ACLNN_SUCCESS;      /* never: the check above passed */
        /* the plane's bytes, counted as the kernel counts each of its planes */
        job_traffic(h, (uint64_t)(out.n[2] * out.n[3] * out.n[4]) * (ix.es + 2 * es));
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


def planted_source(text: str, planes: int) -> str:
    """The op's C source with the extra gather planted (AssertionError when the kernel changed)."""
    assert text.count(_ANCHOR) == 1, f"{SOURCE}: the end of unpool_kernel is not where the planting expects it"
    text = text.replace(_ANCHOR, _PLANT + _ANCHOR)
    return text.replace('#define API "aclnnMaxUnpool3dBackward"',
                        f'#define API "aclnnMaxUnpool3dBackward"\n#define PLANTED_PLANES {int(planes)}', 1)


def planted_root(directory: Path, planes: int) -> Path:
    """Build the copy with the planted kernel; its install root."""
    return edited_root(directory, SOURCE, lambda text: planted_source(text, planes))


def edited_root(directory: Path, source: str, edit) -> Path:
    """A copy of swcann/ under `directory` with `source` (a path in the repo) replaced by
    edit(its text), built; its install root (tests/test_bit_drift.py plants a change of bits)."""
    directory = Path(directory)
    if directory.exists():
        shutil.rmtree(directory)
    for part in ("swcann", "platforms"):        # the build writes its platform header from platforms/
        shutil.copytree(REPO / part, directory / part, ignore=shutil.ignore_patterns("__pycache__"))
    src = directory / source
    src.write_text(edit(src.read_text()))
    done = subprocess.run([sys.executable, "-m", "swcann.build"], cwd=directory, capture_output=True, text=True,
                          timeout=600, env=swenv.bare_env())
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-3000:]
    return Path(done.stdout.strip().splitlines()[-1])


def suite(report_dir: Path, *args, root: Path | None = None, select: str = SELECT, soc: str = "ascend910b",
          timeout: float = 600, env: dict | None = None) -> subprocess.CompletedProcess:
    """A suite run from this checkout in a fresh shell: on the library at `root` (ASCEND_HOME_PATH),
    else on the checkout's own software CANN; `env`: more variables (SWCANN_DEVICE_TIME=1, ...)."""
    env = {**swenv.bare_env(), **(env or {})}
    if root is not None:
        env["ASCEND_HOME_PATH"] = str(root)
    cmd = [sys.executable, "-m", "pytest", "cases/", "--backend", "aclnn", "-n", "0", "-q", "-p", "no:cacheprovider",
           "--soc", soc, "--report-dir", str(report_dir), "--no-html", "-k", select, *args]
    return subprocess.run(cmd, cwd=REPO, env={**env, "PYTHONDONTWRITEBYTECODE": "1"}, capture_output=True,
                          text=True, timeout=timeout)
