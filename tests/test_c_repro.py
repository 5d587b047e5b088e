"""The standalone C reproducer (harness/repro/): for cases across all five operators it is
generated, built with the documented one-line command against the software CANN, run, and held to
what the harness's own aclnn backend does with the same case in this process: the same
descriptors, the same phase-1 status, the same output digest, the same metrics and verdict. Then
the library is broken on purpose (SWCANN_FAULTS, a golden changed by one ulp, the wrong SoC) and
the program must say FAIL and why, with the numbers compare.py gives for the bytes it got."""
from __future__ import annotations

import dataclasses
import json
import math
import os
import re
import shutil
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pytest
import torch

from harness.acl.objects import CaseObjects, describe_tensor
from harness.audit import traceability
from harness.core import dtypes, families
from harness.core.status import Status
from harness.judge import compare, digest, runner
from harness.reporting import dump_meta
from harness.model.spec import OUT_POINTERS
from harness.repro import BUILD_COMMAND, c_files, lookup, write_c_repro
from harness.repro import __main__ as repro_cli, plan as plan_mod
from harness.repro.plan import raw_bytes
from tests import swenv

# how the tests compile C: a generated program and the fixed C of harness/repro/csrc/ alike
COMPILERS = (["cc", "-std=c11", "-pedantic"], ["c++", "-x", "c++", "-std=c++11"])
WARNINGS = ("-Wall", "-Wextra", "-Werror")
FAMILY = swenv.IN_PROCESS_FAMILY       # the in-process backend's family: the harness side of every comparison
SMALL = 20000                           # elements: every selected case builds and runs in well under a second


def _too_big(case) -> bool:
    """Invalid scenarios may name huge shapes (unbacked descriptors): the case's own shape counts."""
    return math.prod(case.shape) > SMALL


def _huge_mutation(case) -> bool:
    shapes = [ch.get("shape", ()) for ch in (case.mutation.tensors.values() if case.mutation else ())]
    return any(math.prod(int(x) for x in s) > 2**24 or any(int(x) < 0 for x in s) for s in shapes)


# what the selection must hold, per operator where the operator has such a case on FAMILY
FEATURES = {
    "valid": lambda c: c.kind == "valid",
    "invalid": lambda c: c.kind == "invalid" and c.status[FAMILY] != 0,
    "scenario passing phase 1": lambda c: c.kind == "invalid" and c.status[FAMILY] == 0,
    "strided": lambda c: "strided" in c.layouts.values(),
    "offset": lambda c: "offset" in c.layouts.values(),
    "channels_last": lambda c: "channels_last" in c.layouts.values(),
    "NHWC": lambda c: c.kind == "valid" and "NHWC" in c.formats.values(),
    "empty": lambda c: c.kind == "valid" and 0 in c.shape,
    "bfloat16": lambda c: c.kind == "valid" and c.dtype == "bfloat16",
    "float16": lambda c: c.kind == "valid" and c.dtype == "float16",
    "float64": lambda c: c.kind == "valid" and c.dtype == "float64",
    "integer data": lambda c: c.kind == "valid" and c.dtype in ("int8", "int32"),
    "int64 data": lambda c: c.kind == "valid" and c.dtype == "int64",
    "uint8 data": lambda c: c.kind == "valid" and c.dtype == "uint8",
    "int32 indices": lambda c: c.kind == "valid" and c.index_dtype == "int32",
    "int64 indices": lambda c: c.kind == "valid" and c.index_dtype == "int64",
    "NULL argument": lambda c: c.mutation is not None and c.mutation.null not in (None, *OUT_POINTERS),
    "NULL workspaceSize": lambda c: c.mutation is not None and c.mutation.null == "workspaceSize",
    "NULL executor": lambda c: c.mutation is not None and c.mutation.null == "executor",
    "NaN/Inf values": lambda c: c.kind == "valid" and c.values.special_fraction > 0,
    "deterministic group": lambda c: c.deterministic,
    "ttk_mixed": lambda c: c.kind == "valid" and c.standard == "ttk_mixed",
    "unbacked descriptor": lambda c: c.kind == "invalid" and _huge_mutation(c),
}
# a feature every operator's case file has, and the ones the selection as a whole must have
EVERY_OP = ("valid", "invalid", "strided", "offset", "empty", "float16", "NULL argument")
SOMEWHERE = tuple(FEATURES)


def _select(loaded) -> dict[str, tuple]:
    """case id -> (case, the features it was picked for): per operator, the first case of each feature."""
    picked: dict[str, tuple] = {}
    for _op, cases in loaded:
        usable = [c for c in cases if FAMILY in c.status and c.tier == "default" and not c.skip and not _too_big(c)]
        for name, wanted in FEATURES.items():
            hit = next((c for c in usable if wanted(c)), None)
            if hit is not None:
                picked.setdefault(hit.id, (hit, set()))[1].add(name)
    return picked


LOADED = traceability.load_all()
SELECTED = _select(LOADED)


# ---------------------------------------------------------------- building and running a program

def _env(root, **extra) -> dict:
    return {**swenv.env_for(root), **extra}


def _build(directory: Path, root) -> subprocess.CompletedProcess:
    """The documented one-line build, in a shell that sourced the CANN's set_env.sh."""
    return subprocess.run(["bash", "-c", BUILD_COMMAND], cwd=directory, env=_env(root), capture_output=True,
                          text=True, timeout=120)


@dataclasses.dataclass
class Run:
    rc: int
    text: str

    def one(self, pattern: str) -> re.Match:
        m = re.search(pattern, self.text, re.M)
        assert m, f"no line matching {pattern!r} in:\n{self.text}"
        return m

    @property
    def status(self) -> int:
        return int(self.one(r"^phase 1: \S+ returned (-?\d+)$").group(1))

    @property
    def verdict(self) -> str:
        return self.one(r"^verdict: (PASS|FAIL|NONE)").group(1)

    @property
    def digests(self) -> dict[str, str]:
        return dict(re.findall(r"^digest\((\w+)\): (sha256:[0-9a-f]{64})", self.text, re.M))

    def metrics(self, output: str) -> dict[str, float]:
        return {k: float(v) for k, v in re.findall(rf"^metric\({output}\) (\w+) = (\S+)$", self.text, re.M)}

    def reason(self, output: str) -> str | None:
        m = re.search(rf"^reason\({output}\): (.*)$", self.text, re.M)
        return m.group(1) if m else None

    @property
    def descriptors(self) -> dict[str, dict]:
        out = {}
        for m in re.finditer(r"^aclCreateTensor\((\w+)\): dims \[(.*)\] strides \[(.*)\] offset (-?\d+) format (-?\d+) "
                             r"\(\w+\) dtype (-?\d+) \(\w+\) storage \[(.*)\]$", self.text, re.M):
            ints = [[int(x) for x in g.split(", ") if x] for g in (m.group(2), m.group(3), m.group(7))]
            out[m.group(1)] = {"view_shape": ints[0], "strides": ints[1], "offset": int(m.group(4)),
                               "format": int(m.group(5)), "dtype": int(m.group(6)), "storage_shape": ints[2]}
        return out

    @property
    def int_arrays(self) -> dict[str, list[int]]:
        return {n: [int(x) for x in v.split(", ") if x]
                for n, v in re.findall(r"^aclCreateIntArray\((\w+)\): \[(.*)\]$", self.text, re.M)}


# Test machinery, not part of a reproducer (which uses the public API only): preloaded into a program,
# it prints at exit what the software CANN still holds (swcannGetStats): a release the program left
# out shows there. atexit: the handler runs after main returns and before any library's destructors.
LIVE_PROBE = r"""
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
static void report(void)
{
    int32_t (*stats)(int64_t *, int64_t *, int64_t *) =
        (int32_t (*)(int64_t *, int64_t *, int64_t *))dlsym(RTLD_DEFAULT, "swcannGetStats");
    int64_t allocs = -1, bytes = -1, objects = -1;
    if (stats)
        stats(&allocs, &bytes, &objects);
    fprintf(stderr, "live at exit: %lld allocations, %lld bytes, %lld objects\n", (long long)allocs,
            (long long)bytes, (long long)objects);
}
__attribute__((constructor)) static void install(void) { atexit(report); }
"""
NOTHING_LIVE = "live at exit: 0 allocations, 0 bytes, 0 objects"


@pytest.fixture(scope="module")
def probe(tmp_path_factory) -> str:
    d = tmp_path_factory.mktemp("probe")
    (d / "live.c").write_text(LIVE_PROBE)
    subprocess.run(["cc", "-shared", "-fPIC", "live.c", "-o", "live.so", "-ldl"], cwd=d, check=True, timeout=60)
    return str(d / "live.so")


def _run(directory: Path, root, probe: str | None = None, family: str = FAMILY, **env) -> Run:
    if probe:
        env["LD_PRELOAD"] = probe
    p = subprocess.run(["./repro"], cwd=directory, env=_env(root, SWCANN_SOC=family, **env), capture_output=True,
                       text=True, timeout=60)
    return Run(p.returncode, p.stdout + p.stderr)


def _write(case, directory: Path, family: str = FAMILY) -> Path:
    args, golden = lookup.materials(case, family)
    return write_c_repro(case, args, golden, directory, family)


def _built(tmp_path, root, case, family: str = FAMILY) -> Path:
    directory = _write(case, tmp_path / "repro", family)
    built = _build(directory, root)
    assert built.returncode == 0, built.stderr
    return directory


# ---------------------------------------------------------------- the selection itself

def test_selection_spans_the_operators_and_the_features():
    assert len(SELECTED) >= 50
    per_op: dict[str, set] = {}
    for case, features in SELECTED.values():
        per_op.setdefault(case.op.name, set()).update(features)
    assert set(per_op) == {op.name for op, _ in LOADED}
    for op, features in per_op.items():
        assert set(EVERY_OP) <= features, (op, set(EVERY_OP) - features)
    missing = set(SOMEWHERE) - set().union(*per_op.values())
    assert not missing, missing


# ---------------------------------------------------------------- the program against the backend

@pytest.fixture(scope="module")
def built(tmp_path_factory, swcann_root):
    """Every selected case generated and built; the builds run two at a time (2 cores)."""
    root = tmp_path_factory.mktemp("c_repro")
    dirs = {cid: _write(case, root / f"case{i:03d}") for i, (cid, (case, _)) in enumerate(sorted(SELECTED.items()))}
    start = time.perf_counter()
    with ThreadPoolExecutor(max(1, min(2, os.cpu_count() or 1))) as pool:
        results = dict(zip(dirs, pool.map(lambda d: _build(d, swcann_root), dirs.values())))
    print(f"\nbuilt {len(dirs)} reproducers in {time.perf_counter() - start:.1f} s", file=sys.stderr)
    return {cid: (dirs[cid], results[cid]) for cid in dirs}


def _harness_descriptors(backend, args) -> dict[str, dict]:
    """What the backend's own tensor creation gives the library, read back from it."""
    out = {}
    with CaseObjects(backend.libs) as objs:
        for a in args:
            if a.kind == "tensor" and a.value is not None:
                handle, _dev = objs.tensor(a.value, dtypes.lookup(a.dtype).acl)
                out[a.name] = describe_tensor(backend.libs, handle)
    backend.after_case()
    return out


def _backend_runs(backend, case):
    """Two runs of the case through the backend, as the runner makes its arguments. Two: where the
    library sums overlapping windows atomically, consecutive launches of a process take opposite
    orders (swcann/README.md), and the program's single launch may be either."""
    runs = []
    for _ in range(2):
        args, golden = lookup.materials(case, FAMILY)
        mode = backend.deterministic_mode() if case.deterministic else None
        if mode:
            with mode:
                result = backend.run(case.op.descriptor, args)
        else:
            result = backend.run(case.op.descriptor, args)
        assert backend.after_case() == []
        runs.append((args, golden, result))
    return runs


@pytest.mark.parametrize("case_id", sorted(SELECTED), ids=sorted(SELECTED))
def test_program_reproduces_the_backend(case_id, built, backend, swcann_root, probe):
    case = SELECTED[case_id][0]
    directory, build = built[case_id]
    assert build.returncode == 0, build.stderr
    program = _run(directory, swcann_root, probe)
    assert NOTHING_LIVE in program.text, program.text       # every object and buffer released
    runs = _backend_runs(backend, case)
    args, golden, result = runs[0]

    assert program.descriptors == _harness_descriptors(backend, args)
    assert program.int_arrays == {a.name: list(a.value) for a in args if a.kind == "int_array" and a.value is not None}
    assert program.status == result.status
    outputs = [a for a in args if a.kind == "tensor" and a.is_output and a.value is not None and not a.value.unbacked]
    harness_digests = {}
    for out in outputs:
        harness = harness_digests[out.name] = [digest.of_arg(r.outputs[out.name]) for _, _, r in runs]
        assert program.digests[out.name] in harness, (program.text, harness)
        if case.runs_numerics(FAMILY):
            # the run the program's output equals is the one its metrics are held to
            _, gold, same = runs[harness.index(program.digests[out.name])]
            verdict = compare.compare(case.standard, gold[out.name], same.outputs[out.name].logical,
                                      case.dtype_of(next(p for p in case.op.params if p.name == out.name)))
            got = program.metrics(out.name)
            assert set(got) == set(verdict.metrics)
            for k, v in verdict.metrics.items():
                assert math.isclose(got[k], v, rel_tol=1e-9, abs_tol=1e-12), (k, got[k], v)
    judged = runner.run_case(case, backend, FAMILY)       # the case's record: its verdict and digests
    assert judged.raw == Status.PASS, judged.reason
    for out in outputs:
        if out.name in judged.digests:
            assert judged.digests[out.name] in harness_digests[out.name]
    assert (program.verdict, program.rc) == ("PASS", 0), program.text


def test_cli_writes_builds_and_prints_the_command(tmp_path, swcann_root):
    case = next(c for c, f in SELECTED.values() if "NHWC" in f)
    p = subprocess.run([sys.executable, "-m", "harness.repro", "c", case.id, "-o", str(tmp_path / "r"),
                        "--soc", FAMILY], capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    assert BUILD_COMMAND in p.stdout
    assert {f.name for f in (tmp_path / "r").iterdir()} >= {"repro.c", "README.txt", "gradOutput.bin", "self.bin",
                                                            "indices.bin", "gradInput.golden.f64"}
    assert BUILD_COMMAND in (tmp_path / "r" / "README.txt").read_text()
    assert _build(tmp_path / "r", swcann_root).returncode == 0
    # run from elsewhere: the data files are found beside the program
    p = subprocess.run([str(tmp_path / "r" / "repro")], cwd=tmp_path, env=_env(swcann_root, SWCANN_SOC=FAMILY),
                       capture_output=True, text=True, timeout=60)
    assert p.returncode == 0 and "verdict: PASS" in p.stdout, p.stdout


def test_unknown_case_id_is_one_line_with_close_matches(capsys):
    known = next(iter(SELECTED))
    assert repro_cli.main(["c", known[:-3], "-o", "/nonexistent/never-written"]) == 4
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and repr(known[:-3]) in err and known in err


def test_a_pytest_node_id_names_its_case_too():
    # what `--collect-only -q` and a FAILED line print; the record's nodeid is the same string
    for case_id, (case, _) in list(SELECTED.items())[:3]:
        node = f"cases/{Path(case.op.path).name}::{case_id.partition('.')[2]}"
        assert lookup.find(node).id == case_id
        assert lookup.find(f"{swenv.REPO}/{node}").id == case_id      # an absolute path names the same file
    with pytest.raises(lookup.UnknownCase, match="unknown case id"):
        lookup.find(node.replace("::", "::x"))                       # another group of the same file


def test_an_output_path_that_is_a_file_is_one_error_line(tmp_path, capsys):
    """-o FILE where FILE exists: a NotADirectoryError/FileExistsError traceback before."""
    existing = tmp_path / "repro.txt"
    existing.write_text("keep me")
    for out in (existing, existing / "sub"):
        assert repro_cli.main(["c", next(iter(SELECTED)), "-o", str(out)]) == 4
        err = capsys.readouterr().err
        assert err.startswith(f"ERROR: -o {out}: ") and err.count("\n") == 1, err
    assert existing.read_text() == "keep me"
    with pytest.raises(SystemExit) as e:
        repro_cli.main(["c"])
    assert e.value.code == 4 and capsys.readouterr().err.startswith("ERROR: python -m harness.repro c: ")


def test_a_golden_that_raises_is_one_error_line(tmp_path, capsys, monkeypatch):
    """A golden torch has no kernel for (a dtype made computable: "scatter_gather_tensor_cpu" not
    implemented for 'UInt16') raised a traceback out of the command before."""
    import golden as golden_pkg
    case_id, (case, _) = next(iter(SELECTED.items()))

    def no_kernel(inputs, attrs):
        raise NotImplementedError("\"scatter_gather_tensor_cpu\" not implemented for 'UInt16'")
    monkeypatch.setattr(golden_pkg.load(case.op.golden), "golden", no_kernel)
    out = tmp_path / "r"
    assert repro_cli.main(["c", case_id, "-o", str(out), "--soc", FAMILY]) == 4
    err = capsys.readouterr().err
    assert err.startswith(f"ERROR: {case_id}: its inputs and golden cannot be made on {FAMILY}: "
                          "NotImplementedError: ") and "UInt16" in err and err.count("\n") == 1, err
    assert not out.exists()


def test_a_family_without_an_expectation_is_refused(capsys):
    case = next(c for c, _ in SELECTED.values() if set(families.FAMILIES) - set(c.status))
    other = sorted(set(families.FAMILIES) - set(case.status))[0]
    assert repro_cli.main(["c", case.id, "-o", "/nonexistent/never-written", "--soc", other]) == 4
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and f"no expected status on {other}" in err


# ---------------------------------------------------------------- what the generator reads

def test_output_storage_is_laid_as_the_harness_lays_it():
    """The program uploads each output's whole storage as build_args laid it: the poison in every
    element of the view and the case's exact guard bytes outside it (harness/inputs/guard.py)."""
    for case, _ in SELECTED.values():
        args, golden = lookup.materials(case, FAMILY)
        plan = plan_mod.make(case, args, golden, FAMILY)
        for t in plan.tensors:
            if t.is_output and not t.unbacked:
                arg = next(a.value for a in args if a.name == t.name)
                assert t.data == raw_bytes(arg.storage), (case.id, t.name)
                assert t.fill * arg.device_view.numel() == raw_bytes(arg.device_view), (case.id, t.name)


def test_written_after_the_run_equals_written_before(tmp_path, backend):
    """A failing case is written by the case worker after its launch, from the same argument list."""
    case = next(c for c, f in SELECTED.values() if "strided" in f and c.kind == "valid")
    args, golden = lookup.materials(case, FAMILY)
    before = write_c_repro(case, args, golden, tmp_path / "before", FAMILY)
    result = backend.run(case.op.descriptor, args)
    assert backend.after_case() == [] and result.phase2_status == 0
    after = write_c_repro(case, args, golden, tmp_path / "after", FAMILY)
    assert sorted(p.name for p in before.iterdir()) == sorted(p.name for p in after.iterdir())
    for p in before.iterdir():
        assert p.read_bytes() == (after / p.name).read_bytes(), p.name


def test_every_standard_of_compare_has_its_c_comparator():
    for name in compare.STANDARDS:
        assert c_files.headline(name) == compare.headline(name)


# ---------------------------------------------------------------- every dtype the program compares, it reads

CSRC = swenv.REPO / "harness" / "repro" / "csrc"


def _c_cases(text: str, function: str) -> set[str]:
    """The ACL enumerators a C helper's switch names (csrc/*.c define one HELPER per top-level brace)."""
    body = re.search(r"^HELPER [\w ]+\b%s\(.*?^}" % function, text, re.S | re.M)
    assert body, function
    return set(re.findall(r"\bcase (ACL_\w+)\s*:", body.group(0)))


def unread_dtypes(elements_c: str, compare_c: str, platform_dtypes=dtypes.ALL) -> list[str]:
    """The platform's dtypes with a C type (the program compares them) that its element readers miss.
    A missing case reads every element as 0 (the switches' default), so a correct library's output
    is a FAIL in the reproducer while the suite passes it."""
    ints, floats = _c_cases(elements_c, "elem_int"), _c_cases(elements_c, "elem_double")
    rounding, bits = _c_cases(compare_c, "round_to"), _c_cases(compare_c, "value_bits")
    missing = []
    for d in (d for d in platform_dtypes if d.c_type):
        need = {"elem_int": ints} if not d.is_float else \
            {"elem_double": floats} | ({} if d.bits == 64 else {"round_to": rounding, "value_bits": bits})
        missing += [f"{d.name}: no case {d.acl_name} in {fn}" for fn, cases in need.items() if d.acl_name not in cases]
    return missing


def test_the_program_reads_every_dtype_it_compares():
    assert unread_dtypes((CSRC / "elements.c").read_text(), (CSRC / "compare.c").read_text()) == []


def test_a_dtype_the_program_does_not_read_is_found():
    elements, comparing = (CSRC / "elements.c").read_text(), (CSRC / "compare.c").read_text()
    assert unread_dtypes(elements.replace("case ACL_INT16:", "case ACL_INT16_GONE:"), comparing) == \
        ["int16: no case ACL_INT16 in elem_int"]
    # a contributor gives uint64 a C type: int64_t cannot hold it, so no reader exists yet
    uint64 = dataclasses.replace(dtypes.lookup("uint64"), c_type="uint64_t")
    assert unread_dtypes(elements, comparing, [*dtypes.ALL, uint64]) == ["uint64: no case ACL_UINT64 in elem_int"]
    assert unread_dtypes(elements, comparing.replace("case ACL_BF16: return round", "case ACL_X: return round")) == \
        ["bfloat16: no case ACL_BF16 in round_to"]


# ---------------------------------------------------------------- the C comparison, on real outputs

def _python_verdict(case, family: str, directory: Path, output: str, golden_file: Path | None = None):
    """compare.py on the bytes the program downloaded (and on its golden file, when given)."""
    args, golden = lookup.materials(case, family)
    arg = next(a for a in args if a.name == output).value
    arg.storage.copy_(torch.frombuffer(bytearray((directory / f"{output}.actual.bin").read_bytes()),
                                       dtype=arg.storage.dtype))
    gold = golden[output]
    if golden_file is not None:
        stored = np.int64 if golden_file.suffix == ".i64" else np.float64
        gold = torch.from_numpy(np.fromfile(golden_file, dtype=stored).reshape(tuple(gold.shape)))
    dtype = case.dtype_of(next(p for p in case.op.params if p.name == output))
    return compare.compare(case.standard, gold, arg.logical, dtype)


def _same_judgement(program: Run, verdict, output: str) -> None:
    got = program.metrics(output)
    assert set(got) == set(verdict.metrics)
    for k, v in verdict.metrics.items():
        assert math.isclose(got[k], v, rel_tol=1e-9, abs_tol=1e-12), (k, got[k], v)
    assert program.reason(output) == (verdict.reason or None)
    summary = program.one(rf"^compare\({output}\): (.*)$").group(1)
    assert summary.split(" at (")[0] == verdict.summary().split(" at (")[0]
    if verdict.worst is not None and not verdict.passed:
        assert f" at {tuple(verdict.worst['index'])}:" in summary


def _thresholds_exist(standard: str, dtype: str) -> bool:
    try:
        compare.thresholds(standard, dtype)
    except ValueError:
        return False
    return True


def _case(case_id: str):
    return next(c for _op, cases in LOADED for c in cases if c.id == case_id)


def _first(pattern: str):
    for _op, cases in LOADED:
        for c in cases:
            if re.search(pattern, c.id):
                return c
    raise AssertionError(f"no case matches {pattern!r}")


def _output(case) -> str:
    return next(p.name for p in case.op.params if p.output)


def _golden_needs_rounding(case) -> bool:
    """Whether some golden value of the case is not representable in its output dtype: only then
    does a comparison depend on how the golden is rounded."""
    _args, golden = lookup.materials(case, FAMILY)
    g = golden[_output(case)].double()
    return bool((g != g.to(dtypes.torch_of(case.dtype)).double()).any())


def _real_output(dtype_wanted) -> str:
    """The first small valid case (any operator) comparing numerics on FAMILY whose output dtype is
    `dtype_wanted`: a float dtype with a golden that needs rounding, or integer data."""
    for _op, cases in LOADED:
        for c in cases:
            if (c.kind == "valid" and c.runs_numerics(FAMILY) and c.tier == "default" and not c.skip
                    and not c.deterministic and not _too_big(c) and dtype_wanted(c.dtype)
                    and (c.dtype.kind in ("int", "uint") or _golden_needs_rounding(c))):
                return c.id
    raise AssertionError("no case has such an output")


# real outputs to judge: float16 and integer data under every standard; bit_exact, whose verdict hangs
# on the golden rounded once to the dtype, also bfloat16 and float32
OUTPUTS = {name: _real_output(lambda d, n=name: d == n) for name in ("float16", "bfloat16", "float32")}
OUTPUTS["integer"] = _real_output(lambda d: d.kind in ("int", "uint"))
STANDARD_CASES = [(std, OUTPUTS[kind]) for std in compare.STANDARDS
                  for kind in ("float16", "integer", *(("bfloat16", "float32") if std == "bit_exact" else ()))
                  if _thresholds_exist(std, _case(OUTPUTS[kind]).dtype)]


def _adversarial_golden(golden_file: Path, actual: torch.Tensor, thresholds: dict, seed: int) -> None:
    """Rewrite the golden so that the program's own output straddles every threshold: errors spread
    around the standard's tolerance, exact values, one-ulp and sign-of-zero differences, NaN, +-Inf,
    +-1 and a value beyond the dtype's range (floats); off-by-one and extreme values (integers)."""
    rng = np.random.default_rng(seed)
    a = actual.double().reshape(-1).numpy() if actual.is_floating_point() else actual.reshape(-1).numpy()
    n, pick = a.size, rng.permutation(a.size)
    if golden_file.suffix == ".i64":
        g = a.astype(np.int64) + rng.integers(-1, 2, n) * (rng.random(n) < 0.3)
        g[pick[0]] = 2**62 + 1
        g.astype(np.int64).tofile(golden_file)
        return
    scale = max([v for k, v in thresholds.items() if k not in ("max_mismatches", "min_matched_ratio")] + [2**-10])
    g = a + scale * (np.abs(a) + 1) * rng.uniform(-3, 3, n)
    tenth = max(n // 10, 1)
    g[pick[:tenth]] = a[pick[:tenth]]                                     # exact
    g[pick[tenth:2 * tenth]] = np.nextafter(a[pick[tenth:2 * tenth]], np.inf)
    # 1.0: where single_bm's relative class starts
    for i, special in zip(pick[2 * tenth:], (np.nan, np.inf, -np.inf, 1e300, -0.0, 1.0, -1.0)):
        g[i] = special
    g.astype(np.float64).tofile(golden_file)


@pytest.mark.parametrize("standard,case_id", STANDARD_CASES, ids=[f"{s}-{_case(c).dtype}" for s, c in STANDARD_CASES])
def test_each_standard_judges_as_compare_does(standard, case_id, tmp_path, swcann_root):
    """On the library's real output: against the true golden, then against goldens that put the
    output across the standard's thresholds (compare.py on the same bytes is the reference)."""
    case = dataclasses.replace(_case(case_id), standard=standard)
    out = _output(case)
    directory = _built(tmp_path, swcann_root, case)
    program = _run(directory, swcann_root)
    verdict = _python_verdict(case, FAMILY, directory, out)
    _same_judgement(program, verdict, out)
    assert (program.verdict == "PASS") == verdict.passed and program.rc == (0 if verdict.passed else 1)
    golden = next(directory.glob(f"{out}.golden.*"))
    for seed in range(3):
        args, _ = lookup.materials(case, FAMILY)
        arg = next(a for a in args if a.name == out).value
        arg.storage.copy_(torch.frombuffer(bytearray((directory / f"{out}.actual.bin").read_bytes()),
                                           dtype=arg.storage.dtype))
        _adversarial_golden(golden, arg.logical, compare.thresholds(standard, case.dtype), seed)
        program = _run(directory, swcann_root)
        verdict = _python_verdict(case, FAMILY, directory, out, golden)
        _same_judgement(program, verdict, out)
        assert (program.verdict == "PASS") == verdict.passed


# ---------------------------------------------------------------- a broken library, on purpose

# A fault lives in one operator's kernel or check (swcann/README.md, harness/audit/faultscore.py),
# so these name the cases that reach it.
FAULT_CASES = [
    # (SWCANN_FAULTS, case, family, what the verdict line must say)
    ("half_store_truncates", r"AvgPool2dBackward\.windows\[bfloat16-2x3x9x9-ks3x3_s2x2_p1x1_cm1_cip1", "ascend910b",
     "max rel err (|g|>=1)="),
    ("batch_plane_zero", r"MaxPool3dWithArgmaxBackward\.windows_exact\[float32-int32-2x2x6x7x8-ks2x2x2_s2x2x2_p0x0x0"
     r"_d1x1x1_cm0-ND-contiguous-uniform", "ascend910b", "MERE="),
    ("acc_workspace_not_zeroed", r"AdaptiveMaxPool2dBackward\.overlapping_half\[float16-int32-2x3x9x9-os4x4",
     "ascend910b", "NaN/Inf mismatches"),
    ("unpool_hw_swap", r"MaxUnpool3dBackward\.gather_all_dtypes\[int8-int64-2x3x2x3x3-os5x7x6", FAMILY,
     "elements differ bitwise"),
    ("unpool_hw_swap", r"MaxUnpool3dBackward\.gather_all_dtypes\[float16-int64-2x3x2x3x3-os5x7x6", FAMILY,
     "elements differ bitwise"),
    ("scatter_drops_nan", r"AdaptiveMaxPool2dBackward\.cov_values\[float32-int64-3x8x7-os2x5-NCL-contiguous-g_specials",
     "ascend910b", "NaN/Inf mismatch"),
    ("workspace_undersized", r"AdaptiveMaxPool2dBackward\.overlapping_half\[float16-int32-2x3x9x9-os4x4", "ascend910b",
     "the library wrote past the end of its workspace: 56 of the guard bytes"),
    ("write_past_end", r"AvgPool2dBackward\.layouts\[float32-2x3x9x9-.*-strided-", FAMILY,
     "gradInput: the library wrote outside the output view"),
    ("input_as_scratch", r"AvgPool2dBackward\.windows\[float32-2x3x9x9-ks3x3_s2x2_p1x1_cm1", FAMILY,
     "the library wrote into input gradOutput: its device buffer changed"),
    ("nullptr_as_invalid", r"AdaptiveMaxPool2dBackward\.bad_params\[B1-gradOutput\]", FAMILY,
     "phase-1 status 161002, expected 161001 [B1]"),
    # the right status from the wrong check: the program compares the check as the record does
    ("rank_ids_swapped", r"MaxPool3dWithArgmaxBackward\.bad_params\[B15\]", FAMILY,
     "status 161002 as expected, but raised by B"),
    ("sync_507015", r"MaxPool2dWithIndicesBackward\.fp32_values\[float32-int32-2x4x8x8-.*-small_int", "ascend910b",
     "phase 1 returned 0 but phase 2 status 0, stream sync 507015"),
]


@pytest.mark.parametrize("fault,pattern,family,says", FAULT_CASES, ids=[f[0] for f in FAULT_CASES])
def test_a_broken_library_is_reported_with_its_numbers(fault, pattern, family, says, tmp_path, swcann_root, probe):
    case = _first(pattern)
    directory = _built(tmp_path, swcann_root, case, family)
    clean = _run(directory, swcann_root, probe, family)
    assert (clean.verdict, clean.rc) == ("PASS", 0), clean.text
    broken = _run(directory, swcann_root, probe, family, SWCANN_FAULTS=fault)
    assert (broken.verdict, broken.rc) == ("FAIL", 1), broken.text
    assert NOTHING_LIVE in broken.text, broken.text     # released on the failing paths too
    assert says in broken.one(r"^verdict: FAIL: (.*)$").group(1)
    if case.runs_numerics(family) and (directory / f"{_output(case)}.actual.bin").exists():
        verdict = _python_verdict(case, family, directory, _output(case))
        _same_judgement(broken, verdict, _output(case))


# Faults that touch the bytes the harness guards: the reproducer --dump-failures writes for the
# failing case must say what the harness's record says, in the same words (region, offset, bytes
# found and expected, count), since it lays the same guard bytes and compares them the same way.
GUARD_FAULTS = [
    ("write_past_end", r"AvgPool2dBackward\.layouts\[float32-2x3x9x9-.*-strided-", FAMILY),
    ("workspace_undersized", r"AdaptiveMaxPool2dBackward\.overlapping_half\[float16-int32-2x3x9x9-os4x4", "ascend910b"),
]


@pytest.mark.parametrize("fault,pattern,family", GUARD_FAULTS, ids=[f[0] for f in GUARD_FAULTS])
def test_dumped_reproducer_says_what_the_record_says(fault, pattern, family, tmp_path, swcann_root):
    case = _first(pattern)
    nodeid = f"cases/{Path(case.op.path).name}::{case.name}"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SWCANN_", "ASCEND_"))}
    proc = subprocess.run([sys.executable, "-m", "pytest", nodeid, "--backend", "aclnn", "--soc", family, "-n", "0",
                           "-q", "-p", "no:cacheprovider", "--no-html", "--tier", "all", "--dump-failures",
                           "--report-dir", str(tmp_path / "rep")], cwd=swenv.REPO, env={**env, "SWCANN_FAULTS": fault},
                          capture_output=True, text=True, timeout=300)
    records = [json.loads(x) for x in (tmp_path / "rep" / "results.jsonl").read_text().splitlines()]
    assert [r["status"] for r in records] == ["FAIL"], proc.stdout + proc.stderr
    meta, _ = dump_meta.load(Path(records[0]["dump"]))
    directory = Path(meta["c_repro"])
    assert _build(directory, swcann_root).returncode == 0
    program = _run(directory, swcann_root, None, family, SWCANN_FAULTS=fault)
    assert (program.verdict, program.rc) == ("FAIL", 1), program.text
    assert records[0]["reason"] in program.one(r"^verdict: FAIL: (.*)$").group(1), (records[0]["reason"], program.text)
    assert re.search(r"at byte \d+: found [0-9a-f ]+(\.\.\.)?, expected [0-9a-f ]+", records[0]["reason"])


def test_a_golden_one_ulp_off_is_one_bitwise_mismatch_at_its_index(tmp_path, swcann_root):
    case = next(c for c, f in SELECTED.values() if "float16" in f and c.standard == "bit_exact")
    directory = _built(tmp_path, swcann_root, case)
    golden = directory / f"{_output(case)}.golden.f64"
    values = np.fromfile(golden, dtype=np.float64)
    k = len(values) // 3
    values[k] = float(np.nextafter(np.float16(values[k]), np.float16(np.inf)))   # the next float16 up
    values.tofile(golden)
    program = _run(directory, swcann_root)
    assert (program.verdict, program.rc) == ("FAIL", 1)
    verdict = _python_verdict(case, FAMILY, directory, _output(case), golden)
    assert verdict.metrics["mismatches"] == 1
    _same_judgement(program, verdict, _output(case))


def test_wrong_soc_and_missing_data_are_not_verdicts(tmp_path, swcann_root, probe):
    case = next(c for c, f in SELECTED.values() if "valid" in f and c.op.name == "AvgPool2dBackward")
    directory = _built(tmp_path, swcann_root, case)
    other = _run(directory, swcann_root, family="ascend910_93")
    assert other.rc == 3 and f"(NOT of family {FAMILY})" in other.text
    (directory / "self.bin").unlink()
    missing = _run(directory, swcann_root, probe)
    assert missing.rc == 2 and "SETUP ERROR: cannot open" in missing.text and missing.verdict == "NONE"
    assert NOTHING_LIVE in missing.text, missing.text      # what was made before the failure is released


@pytest.mark.parametrize("feature", ["NaN/Inf values", "unbacked descriptor", "deterministic group", "NULL argument"])
def test_the_program_is_clean_c_and_cxx(feature, tmp_path, swcann_root):
    """Warnings-free as C11 and as C++ (built as C++, it includes aclnn/acl_meta.h itself), with
    the parts a case may leave out (no output to digest, no numerics) and may add (deterministic mode)."""
    case = next(c for c, f in SELECTED.values() if feature in f)
    directory = _write(case, tmp_path / "r")
    include = f"-I{swcann_root}/include"
    for compiler in COMPILERS:
        p = subprocess.run([*compiler, *WARNINGS, "-fsyntax-only", "repro.c", include],
                           cwd=directory, capture_output=True, text=True, timeout=120)
        assert p.returncode == 0, p.stderr


# ---------------------------------------------------------------- the fixed C on its own (harness/repro/csrc/)

def _compile_support(csrc: Path, standard: str, compiler: list[str], swcann_root) -> subprocess.CompletedProcess:
    """A translation unit of nothing but the fixed C, in the order a program carries it, compiled
    with the warnings a generated program is held to."""
    unit = csrc / f"unit_{standard}.c"
    unit.write_text("\n".join([f'#include "{c_files.HEAD}"', c_files.defines(8),
                               *(f'#include "{f}"' for f in c_files.files(standard)),
                               "int main(void)\n{\n    return 0;\n}\n"]))
    return subprocess.run([*compiler, *WARNINGS, "-c", unit.name, "-o", f"{unit.stem}.o", f"-I{swcann_root}/include",
                           f"-I{csrc}"], cwd=csrc, capture_output=True, text=True, timeout=120)


def _one_per_standard_file() -> list[str]:
    return sorted({c_files.ALIASES.get(s, s) for s in c_files.standards()})


def test_every_csrc_file_is_compiled_by_the_support_test():
    covered = {c_files.HEAD}.union(*(c_files.files(s) for s in _one_per_standard_file()))
    present = {str(p.relative_to(c_files.CSRC)) for p in c_files.CSRC.rglob("*") if p.is_file()}
    assert present == covered, present ^ covered


@pytest.mark.parametrize("standard", _one_per_standard_file())
def test_the_support_files_compile_clean_on_their_own(standard, tmp_path, swcann_root):
    """Every csrc/ file, as C11 and as C++, with -Wall -Wextra -Werror: a warning fails."""
    csrc = tmp_path / "csrc"
    shutil.copytree(c_files.CSRC, csrc)
    for compiler in COMPILERS:
        p = _compile_support(csrc, standard, compiler, swcann_root)
        assert p.returncode == 0, f"{' '.join(compiler)}:\n{p.stderr}"


def test_a_warning_in_the_support_files_fails_their_compilation(tmp_path, swcann_root):
    """The check above can fail: an unused variable planted in a copy of support.c stops the build."""
    csrc = tmp_path / "csrc"
    shutil.copytree(c_files.CSRC, csrc)
    support = csrc / "support.c"
    head = "HELPER const char *recent_error(void)\n{\n"
    assert head in support.read_text()
    support.write_text(support.read_text().replace(head, head + "    int planted_unused;\n"))
    for compiler in COMPILERS:
        p = _compile_support(csrc, "allclose", compiler, swcann_root)
        assert p.returncode != 0 and "planted_unused" in p.stderr, p.stderr


def _sha256_constants() -> tuple[list[int], list[int]]:
    """SHA-256's K and H0 from their definition: the first 32 fractional bits of the cube roots of
    the first 64 primes, and of the square roots of the first 8."""
    primes = [n for n in range(2, 312) if all(n % d for d in range(2, math.isqrt(n) + 1))][:64]

    def icbrt(n: int) -> int:
        x = 1 << ((n.bit_length() + 2) // 3)        # above the root
        while True:
            y = (2 * x + n // (x * x)) // 3
            if y >= x:
                return x
            x = y
    return [icbrt(p << 96) & 0xFFFFFFFF for p in primes], [math.isqrt(p << 64) & 0xFFFFFFFF for p in primes[:8]]


def test_the_digest_constants_are_sha256s_definition():
    text = c_files.text("digest.c")
    k, h0 = _sha256_constants()
    for name, values in (("SHA_K", k), ("SHA_H0", h0)):
        body = re.search(name + r"\[\d+\] = \{([^}]*)\}", text).group(1)
        assert [int(v, 16) for v in re.findall(r"0x([0-9a-f]{8})u", body)] == values, name


def test_cases_dir_is_where_ids_are_looked_up(tmp_path, capsys):
    case = next(c for c, f in SELECTED.values() if "valid" in f)
    other = next(c for c, _ in SELECTED.values() if c.op.name != case.op.name)
    (tmp_path / "cases").mkdir()
    (tmp_path / "cases" / Path(case.op.path).name).write_bytes(Path(case.op.path).read_bytes())
    assert repro_cli.main(["c", case.id, "-o", str(tmp_path / "r"), "--cases", str(tmp_path / "cases")]) == 0
    assert (tmp_path / "r" / "repro.c").is_file()
    assert repro_cli.main(["c", other.id, "-o", str(tmp_path / "r2"), "--cases", str(tmp_path / "cases")]) == 4
    assert f"unknown case id {other.id!r}" in capsys.readouterr().err
