"""Set-up mistakes are said in one line at start-up, before any case runs, under CI's own
command (-q with xdist) as without it: exit code 4, never an INTERNALERROR."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from harness.target import Target
from harness.target.settings import BackendSettings
from harness.acl.runtime import AclCallError
from harness.backends.torch_backend import TorchBackend
from harness.execution import child
from harness.execution.supervisor import CaseExecutor
from harness.operators import load_case_file
from tests.robust_cases import write_cases

REPO = Path(__file__).resolve().parent.parent
NO_CANN = {"ASCEND_HOME_PATH": None, "ASCEND_TOOLKIT_HOME": None}


def _corrupt_cann(tmp: Path) -> Path:
    lib = tmp / "cann" / "lib64"
    lib.mkdir(parents=True)
    for name in ("libascendcl.so", "libnnopbase.so", "libopapi.so"):
        (lib / name).write_bytes(b"not an ELF file\n" * 8)
    return tmp / "cann"


def _read_only_dir(tmp: Path) -> Path:
    if os.geteuid() == 0:              # root writes through permissions: sysfs refuses a new directory
        return Path("/sys/aclnn-conformance-report")
    path = tmp / "read-only"
    path.mkdir()
    path.chmod(0o555)
    return path


def _under_a_file(tmp: Path) -> Path:
    (tmp / "afile").write_text("")
    return tmp / "afile" / "sub"


# (name, extra arguments, environment changes, what the one line must say)
ERRORS = [
    ("bad aclnn device", ["--backend", "aclnn", "--device", "7"], {}, "--device 7: only 1 device(s) visible"),
    # with its lib64 on LD_LIBRARY_PATH, as set_env.sh would have it: the loader itself must refuse it
    ("corrupt library", ["--backend", "aclnn"],
     {"ASCEND_HOME_PATH": _corrupt_cann, "LD_LIBRARY_PATH": lambda tmp: tmp / "cann" / "lib64"}, "cannot load"),
    ("no CANN with --no-sw-fallback", ["--backend", "aclnn", "--no-sw-fallback"], NO_CANN,
     "--no-sw-fallback: no CANN found"),
    ("SoC mismatch", ["--backend", "aclnn", "--soc", "ascend950"], {"SWCANN_SOC": "ascend910b"},
     "SWCANN_SOC=ascend910b (inherited from the environment) asks the software CANN for ascend910b, but --soc "
     "ascend950 was requested"),
    ("bad SWCANN_FAULTS", ["--backend", "aclnn"], {"SWCANN_FAULTS": "phase2_explode"},
     "Value 'phase2_explode' for env SWCANN_FAULTS is invalid"),
    ("bad SWCANN_DEVICE_COUNT", ["--backend", "aclnn"], {"SWCANN_DEVICE_COUNT": "two"},
     "Value 'two' for env SWCANN_DEVICE_COUNT is invalid"),
    # read as off, it would run the documented semantics while the report records the variable as set
    ("bad SWCANN_DEVIATIONS", ["--backend", "aclnn"], {"SWCANN_DEVIATIONS": "yes"},
     "Value 'yes' for env SWCANN_DEVIATIONS is invalid"),
    ("read-only report dir", ["--backend", "torch", "--report-dir", _read_only_dir], {}, "cannot write there"),
    # each case worker died opening such a cache, with an error that named neither option nor path
    ("golden cache under a file", ["--backend", "torch", "--golden-cache", _under_a_file], {},
     "/afile/sub: cannot create the directory (Not a directory)"),
    ("torch device that does not exist", ["--backend", "torch", "--device", "cuda:7"], {},
     "--device: torch cannot use device 'cuda:7'"),
]


def _run(tmp: Path, args, env_changes, *mode):
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    env.pop("SWCANN_FAULTS", None)
    for key, value in env_changes.items():
        value = value(tmp) if callable(value) else value
        env.pop(key, None) if value is None else env.__setitem__(key, str(value))
    args = [str(a(tmp)) if callable(a) else a for a in args]
    if "--report-dir" not in args:
        args += ["--report-dir", str(tmp / "rep")]
    cmd = [sys.executable, "-m", "pytest", "-p", "harness.plugin", str(tmp / "cases"), "--rootdir", str(tmp),
           "-c", "/dev/null", "-p", "no:cacheprovider", *mode, *args]
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=300)
    return proc.returncode, proc.stdout + proc.stderr


@pytest.mark.parametrize("name,args,env,says", ERRORS, ids=[e[0] for e in ERRORS])
def test_configuration_error_is_one_line_before_any_case(tmp_path, name, args, env, says):
    write_cases(tmp_path, channels=[1], sides=(4,))
    code, out = _run(tmp_path, args, env, "-q", "-n", "2")
    lines = [ln for ln in out.splitlines() if ln.strip()]
    assert code == 4, out
    assert len(lines) == 1 and lines[0].startswith("ERROR: ") and says in lines[0], out
    assert not (tmp_path / "rep" / "journal").exists()                  # no case ran


def test_the_line_is_the_same_without_q_and_n(tmp_path):
    write_cases(tmp_path, channels=[1], sides=(4,))
    quiet = _run(tmp_path, ["--backend", "aclnn", "--device", "7"], {}, "-q", "-n", "2")
    plain = _run(tmp_path, ["--backend", "aclnn", "--device", "7"], {}, "-n", "0")
    assert plain[0] == quiet[0] == 4
    said = [[ln for ln in out.splitlines() if ln.strip()] for _, out in (plain, quiet)]
    assert said[0] == said[1] and len(said[0]) == 1, plain[1]


class _Failing(TorchBackend):
    def run(self, op, args):
        raise AclCallError("aclrtMemcpy(device to host, 64 bytes)", 507015, "EZ9999: device lost the buffer")


def test_an_exception_inside_a_case_keeps_its_message(tmp_path):
    path = write_cases(tmp_path, channels=[1], sides=(4,))
    _, cases = load_case_file(path)
    backend = _Failing(type("S", (), {"device": "cpu", "family": "ascend910b"})())
    outcome, recovery = child.run_one(backend, cases[0])
    executor = CaseExecutor({"backend": "torch"})
    try:
        outcome = executor._finished(cases[0], outcome, recovery)
    finally:
        executor.close()
    assert outcome.raw.value == "FAIL"
    assert outcome.reason == ("AclCallError: aclrtMemcpy(device to host, 64 bytes) failed with 507015: "
                              "EZ9999: device lost the buffer")
    assert "_Failing" not in outcome.reason and "raise AclCallError" in outcome.diagnostics["traceback"]


# ---------------------------------------------------------------- files, values and paths a careless user gives

BINARY = bytes(range(256)) * 4                           # not UTF-8 (0x80..0xff), with NULs
LATIN1 = "target: {backend: aclnn, family: ascend910b}\n# café\n".encode("latin-1")


def _file(name: str, data: bytes):
    def make(tmp: Path) -> Path:
        path = tmp / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
        return path
    return make


def _report_dir_with_bad_line(tmp: Path) -> Path:
    (tmp / "old").mkdir()
    (tmp / "old" / "results.jsonl").write_bytes(b'{"case_id": "x", "status": "PASS", "duration_s": 1}\n\xff\xfe\n')
    return tmp / "old"


# (name, arguments after the case path, what the one line must say)
BAD_INPUTS = [
    ("binary --gate file", ["--gate", _file("bl.yaml", BINARY)], "bl.yaml: not UTF-8 text"),
    ("non-UTF-8 baseline in a --gate directory", ["--gate", lambda tmp: _file("gd/x.yaml", LATIN1)(tmp).parent],
     "gd/x.yaml: not UTF-8 text"),
    ("NUL bytes in a --gate file", ["--gate", _file("nul.yaml", b"\0" * 64)],
     "nul.yaml: not valid YAML: unacceptable character #x0000: special characters are not allowed"),
    ("binary --shard-durations JSON", ["--shard-durations", _file("d.json", BINARY)], "d.json: not UTF-8 text"),
    ("binary --shard-durations results", ["--shard-durations", _file("r.jsonl", BINARY)], "r.jsonl:1: "),
    ("non-UTF-8 line in a --shard-durations report dir", ["--shard-durations", _report_dir_with_bad_line],
     "old/results.jsonl:2: not UTF-8 text"),
    ("empty --shard", ["--shard", ""], "--shard: an empty value (an unset variable in the calling script?)"),
    ("empty --gate", ["--gate", ""], "--gate: an empty value"),
    ("empty --shard-durations", ["--shard-durations", ""], "--shard-durations: an empty value"),
    ("empty --report-dir", ["--report-dir", ""], "--report-dir: an empty value"),
    ("empty --resume", ["--resume", ""], "--resume: an empty value"),
]


def _run_paths(tmp: Path, paths, args, *mode, env=None):
    environ = {k: v for k, v in os.environ.items() if k != "SWCANN_FAULTS"}
    environ.update({"PYTHONPATH": str(REPO), **(env or {})})
    args = [str(a(tmp)) if callable(a) else a for a in args]
    if "--report-dir" not in args:
        args += ["--report-dir", str(tmp / "rep")]
    cmd = [sys.executable, "-m", "pytest", "-p", "harness.plugin", *paths, "--rootdir", str(tmp), "-c", "/dev/null",
           "-p", "no:cacheprovider", "--backend", "aclnn", *mode, *args]
    proc = subprocess.run(cmd, capture_output=True, text=True, env=environ, timeout=300, cwd=tmp)
    return proc.returncode, proc.stdout + proc.stderr


def _one_error_line(code: int, out: str, says: str) -> None:
    lines = [ln for ln in out.splitlines() if ln.strip()]
    assert code == 4, out
    assert len(lines) == 1 and lines[0].startswith("ERROR: ") and says in lines[0], out


@pytest.mark.parametrize("name,args,says", BAD_INPUTS, ids=[e[0] for e in BAD_INPUTS])
def test_a_bad_file_or_an_empty_value_is_one_line_before_any_report(tmp_path, name, args, says):
    """Binary and non-UTF-8 baselines and durations files were 33 lines of INTERNALERROR; an empty
    --shard (an unset CI variable) silently ran every case."""
    write_cases(tmp_path, channels=[1], sides=(4,))
    code, out = _run_paths(tmp_path, ["cases"], args, "-q", "-n", "2")
    _one_error_line(code, out, says)
    assert not (tmp_path / "rep").exists()                       # nothing written, not even an empty report


@pytest.mark.parametrize("mode", [("-q", "-n", "2"), ("-n", "0")], ids=["q-n2", "plain"])
@pytest.mark.parametrize("path, says", [
    ("cases/nope.yaml", "file or directory not found: cases/nope.yaml"),
    ("cases/mp.yaml::nope[float32]", "not found: cases/mp.yaml::nope[float32] (no case of cases/mp.yaml has that name)"),
], ids=["case file", "node id"])
def test_a_case_path_that_does_not_exist_is_one_line_before_any_report(tmp_path, mode, path, says):
    """Under -q -n 2 this exited 5 without a word (xdist's workers collect); plain, pytest said it only
    after the run had written an empty report."""
    write_cases(tmp_path, channels=[1], sides=(4,))
    code, out = _run_paths(tmp_path, [path], [], *mode)
    _one_error_line(code, out, says)
    assert not (tmp_path / "rep").exists()


def test_a_node_id_of_a_whole_group_still_runs(tmp_path):
    """pytest's own rule: a node id's name without its parameters selects every case of that name."""
    write_cases(tmp_path, channels=[1], sides=(4,))
    code, out = _run_paths(tmp_path, ["cases/mp.yaml::before"], [], "-q", "-n", "0")
    assert code == 0 and "8 passed" in out, out


def test_resuming_a_complete_run_says_nothing_to_resume(tmp_path):
    """It exited 5 ("no tests ran") and rewrote the reports; now it says so and leaves them alone."""
    write_cases(tmp_path, channels=[1], sides=(4,))
    code, out = _run_paths(tmp_path, ["cases"], [], "-q", "-n", "0")
    assert code == 0, out
    rep = tmp_path / "rep"
    before = {p.name: (p.stat().st_mtime_ns, p.read_bytes()) for p in rep.iterdir() if p.is_file()}
    code, out = _run_paths(tmp_path, ["cases"], ["--resume", str(rep), "--report-dir", str(rep)], "-q", "-n", "2")
    lines = [ln for ln in out.splitlines() if ln.strip()]
    assert code == 0 and len(lines) == 1, out
    assert f"nothing to resume: every one of the 13 case(s) of the run in {rep} has a final record" in lines[0]
    assert {p.name: (p.stat().st_mtime_ns, p.read_bytes()) for p in rep.iterdir() if p.is_file()} == before


def test_resuming_a_run_with_a_case_left_is_no_nothing(tmp_path):
    """The other half: one final record gone from the journal, and the resumed run runs that case."""
    write_cases(tmp_path, channels=[1], sides=(4,))
    assert _run_paths(tmp_path, ["cases"], [], "-q", "-n", "0")[0] == 0
    journal = next((tmp_path / "rep" / "journal").glob("*-main.jsonl"))
    lines = journal.read_text().splitlines()
    journal.write_text("\n".join(ln for ln in lines if not ('"event": "end"' in ln and "f361" in ln)) + "\n")
    code, out = _run_paths(tmp_path, ["cases"], ["--resume", str(tmp_path / "rep")], "-q", "-n", "0")
    assert code == 0 and "1 passed" in out and "nothing to resume" not in out, out


def test_a_library_error_without_a_message_says_so(tmp_path):
    """aclInit fails and aclGetRecentErrMsg returns NULL: the line ended in 'failed with 100000: '."""
    from tests.hostile_lib import hostile_env
    write_cases(tmp_path, channels=[1], sides=(4,))
    env = hostile_env("init_fail_silent", tmp_path / "state")
    env["PYTHONPATH"] = os.pathsep.join([env["PYTHONPATH"], str(REPO)])
    code, out = _run_paths(tmp_path, ["cases"], [], "-q", "-n", "2", env=env)
    _one_error_line(code, out, "aclInit failed with 100000: the library gave no error message "
                               "(aclGetRecentErrMsg returned nothing)")


def test_a_harness_error_while_recording_a_failure_keeps_the_failure(tmp_path):
    """--dump-failures cannot write its arrays (a file is where the directory should be). The failing
    case's record keeps its own reason and says the harness error beside it; the worker once died of
    it and the case became a CRASH whose reason was the harness's FileExistsError."""
    write_cases(tmp_path, channels=[1], sides=(4,))
    rep = tmp_path / "rep"
    rep.mkdir()
    (rep / "failures").write_text("")
    from tests.robust_cases import faulty_numel
    code, out = _run_paths(tmp_path, ["cases"], ["--dump-failures", "--case-workers", "1"], "-q", "-n", "0",
                           env={"SWCANN_FAULTS": f"tail_unwritten@numel={faulty_numel('f289')}"})
    import json
    bad = [json.loads(x) for x in (rep / "results.jsonl").read_text().splitlines() if '"PASS"' not in x]
    assert len(bad) == 1 and bad[0]["status"] == "FAIL", out
    assert bad[0]["reason"].startswith("gradInput: FAIL single_bm_high_performance[float32]"), bad[0]["reason"]
    assert bad[0]["harness_error"].startswith("--dump-failures: cannot write the arrays: FileExistsError"), bad[0]
    import jsonschema
    schema = json.loads((REPO / "harness" / "reporting" / "record.schema.json").read_text())
    assert not list(jsonschema.Draft202012Validator(schema).iter_errors(bad[0]))
    assert "harness error: --dump-failures: cannot write the arrays" in out


# ---------------------------------------------------------------- issue 32: --gate and --resume edges

def _perf_baseline(tmp: Path, family: str = "ascend910b", sample: float = 1.0) -> Path:
    import json
    doc = {"kind": "perf", "target": {"backend": "aclnn", "family": family}, "measured": {"backend": "aclnn"},
           "cases": {"X.g[x]": {"timing": "cpu_time", "samples_ms": [1.0, sample], "n": 2}}}
    path = tmp / f"perf-{family}.json"
    path.write_text(json.dumps(doc))         # json writes a NaN as NaN, and reads it back
    return path


@pytest.mark.parametrize("mode", [("-q", "-n", "0"), ("-n", "2")], ids=["q-n0", "n2"])
@pytest.mark.parametrize("make, says", [
    (lambda tmp: _perf_baseline(tmp, sample=float("nan")), "samples_ms[1]': must be a finite number"),
    (lambda tmp: _perf_baseline(tmp, family="ascend950"), "baseline is for aclnn-ascend950, but the run is aclnn-ascend910b"),
], ids=["nan-sample", "other-family"])
def test_a_live_gate_that_cannot_gate_is_one_line_before_any_report(tmp_path, mode, make, says):
    """It exited 4, but printed 12 lines, wrote an empty run (moving the previous one aside) and said
    'all N deselected'. The family is known only once the library is open (no --soc here)."""
    write_cases(tmp_path, channels=[1], sides=(4,))
    code, out = _run_paths(tmp_path, ["cases"], ["--gate", make(tmp_path)], *mode)
    _one_error_line(code, out.replace(_REEXEC_LINE(out), ""), says)
    assert not (tmp_path / "rep").exists()


def _REEXEC_LINE(out: str) -> str:
    """The software CANN's note that it re-executes with its set_env.sh (stderr, before any option is read)."""
    return next((ln for ln in out.splitlines() if ln.startswith("*** software CANN at ")), "")


@pytest.mark.parametrize("damage", [
    '{"event": "start", "case_id": "MaxPool2dWithIndicesBackward.before[f#oat32]", "t": 1, garbage\n',   # a phantom id
    '{"event": "start", "case_id": "MaxPool2dWithIndicesBack',                                          # cut in the id
    '{"event": "end", "case_id": "x", "t": 1, "rec',                                                    # cut after it
], ids=["damaged-id", "cut-in-id", "cut-after-id"])
def test_resuming_a_complete_run_whatever_its_last_line_says_nothing_to_resume(tmp_path, damage):
    """A damaged line made up a MISSING case (exit 5), a line cut inside the id said '0 will run
    again' (exit 5): the damaged line is skipped and named, and the run has nothing to do."""
    write_cases(tmp_path, channels=[1], sides=(4,))
    code, out = _run_paths(tmp_path, ["cases"], [], "-q", "-n", "0")
    assert code == 0, out
    rep = tmp_path / "rep"
    journal = next((rep / "journal").glob("*-main.jsonl"))
    with open(journal, "a", encoding="utf-8") as f:
        f.write(damage)
    code, out = _run_paths(tmp_path, ["cases"], ["--resume", str(rep), "--report-dir", str(rep)], "-q", "-n", "0")
    lines = [ln for ln in out.splitlines() if ln.strip() and not ln.startswith("*** software CANN at ")]
    assert code == 0 and len(lines) == 1, out
    assert "nothing to resume: every one of the 13 case(s)" in lines[0] and "1 damaged journal line(s) skipped" in lines[0]


def test_a_misspelt_backend_setting_is_an_error_not_its_default():
    """The case worker's settings are typed: a key no field has fails where the settings are built."""
    with pytest.raises(ValueError, match=r"unknown key\(s\) determinsm_level \(known: backend, device"):
        CaseExecutor({"backend": "torch", "determinsm_level": 1})
    assert BackendSettings.from_wire(BackendSettings(deterministic=True).to_wire()).level == 1


def test_the_target_crosses_as_plain_strings_spelling_truth_one_way_and_reads_the_old_way():
    from harness.backends.base import BackendInfo
    target = BackendInfo("aclnn", "lib", "npu:0", "Ascend910B2", "ascend910b", simulated=True,
                         details={"software_cann": True, "relaunch": False, "opapi": "/x/libopapi.so",
                                  "fallback_reason": None}).target()
    assert target.simulated and target.software_cann and not target.relaunch and target.family == "ascend910b"
    wire = target.to_wire()
    assert all(isinstance(k, str) and isinstance(v, str) for k, v in wire.items()), wire
    assert (wire["simulated"], wire["software_cann"], wire["relaunch"]) == ("true", "true", "false")
    assert (wire["opapi"], wire["fallback_reason"]) == ("/x/libopapi.so", "")      # details ride along
    assert Target.from_wire(wire) == target and Target.from_wire(wire).to_wire() == wire
    assert target.detail("opapi") == "/x/libopapi.so" and target.detail("absent") == ""
    before = {k: v for k, v in wire.items() if k != "determinism_level"}      # records of before it: str(bool)
    old = Target.from_wire({**before, "software_cann": "True", "deterministic": "True"})
    assert old.software_cann and old.deterministic
    nothing = Target.from_wire({})      # missing provenance is never read as hardware
    assert nothing.simulated and nothing.provenance == "unknown" and "simulated" not in nothing.to_wire()
    hardware = Target.from_wire({**wire, "simulated": "false"})
    assert not hardware.simulated and hardware.to_wire()["simulated"] == "false"


def _closed_pipe_run(args: list[str]) -> subprocess.CompletedProcess:
    """A command whose stdout's reader is gone before it starts (the read end closed first), as in
    `... | head -1` once head has its line: every print of it fails."""
    read, write = os.pipe()
    os.close(read)
    try:
        return subprocess.run([sys.executable, "-m", *args], stdout=write, stderr=subprocess.PIPE, text=True,
                              cwd=Path(__file__).resolve().parents[1], timeout=300)
    finally:
        os.close(write)


def test_a_reader_that_stops_reading_ends_a_command_quietly(tmp_path):
    from tests.reporting_fixtures import rec, write_run
    run = tmp_path / "run"
    write_run(run, [rec(f"Op.g[{i}]", "FAIL" if i % 3 else "PASS") for i in range(30)])
    for args in (["harness.reporting", "triage", str(run)], ["harness.audit.coverage"]):
        proc = _closed_pipe_run(args)
        assert proc.returncode == 141, (args, proc.returncode, proc.stderr[-2000:])
        assert "Traceback" not in proc.stderr and "BrokenPipe" not in proc.stderr, proc.stderr
