"""The judge catches wrong device behaviour: broken on purpose, one way at a time."""
from __future__ import annotations

import copy
from dataclasses import replace
from types import SimpleNamespace

import pytest
import torch
import yaml

from harness import inputs
from harness.backends.base import BackendInfo, RunResult
from harness.backends.torch_backend import TorchBackend
from harness.core.status import Status
from harness.operators import load_case_file as load
from harness.judge.runner import run_case
from tests.test_casefile_errors import BASE


@pytest.fixture(scope="module")
def cases(tmp_path_factory):
    doc = copy.deepcopy(BASE)
    doc["groups"][0]["matrix"]["layout"] = ["contiguous", "strided"]
    doc["groups"][0]["matrix"]["shape"] = [[2, 3, 6, 6]]
    doc["groups"][0]["matrix"]["attrs"][0].update(kernelSize=[3, 3], stride=[2, 2], padding=[1, 1])
    path = tmp_path_factory.mktemp("c") / "case.yaml"
    path.write_text(yaml.safe_dump(doc))
    _, loaded = load(path)
    return {c.name.split("-")[-2] if c.kind == "valid" else c.name: c for c in loaded}


class Tampering(TorchBackend):
    """The torch backend plus one deliberate fault."""

    def __init__(self, fault=None, status=0, names="B1", leak=None):
        super().__init__(SimpleNamespace(device="cpu", family="ascend910b"))
        self.info = replace(self.info, details={"names_checks": True})
        self.fault, self.status, self.names, self.leak = fault, status, names, leak

    def run(self, case, args):
        if self.status:
            return RunResult(status=self.status, message=f"EZ1001: [aclnnX] check {self.names} failed: test")
        result = super().run(case, args)
        out = result.outputs["gradInput"]
        if self.fault:
            self.fault(out)
        return result

    def after_case(self):
        return [self.leak] if self.leak else []


def _nudge(out):
    flat = out.logical
    idx = tuple(int(i) for i in torch.nonzero(flat != 0)[0])
    flat[idx] = flat[idx] * 1.01


def _unwritten(out):
    idx = tuple(int(i) for i in torch.nonzero(out.logical != 0)[0])
    out.logical[idx] = float("nan")


def _gap_write(out):
    out.storage[~out.covered()] = 0.0


def test_correct_device_passes(cases):
    for c in ("contiguous", "strided"):
        assert run_case(cases[c], Tampering(), "ascend910b").raw is Status.PASS


@pytest.mark.parametrize("fault,words", [(_nudge, "at ("), (_unwritten, "NaN")], ids=["one-element-1%-off", "one-element-unwritten"])
def test_wrong_element_is_caught_and_located(cases, fault, words):
    out = run_case(cases["contiguous"], Tampering(fault), "ascend910b")
    assert out.raw is Status.FAIL, out
    assert out.verdict is not None and not out.verdict["passed"]
    assert out.verdict["worst"] is not None
    assert words.lower() in out.reason.lower(), out.reason


def test_write_outside_strided_view_is_caught(cases):
    out = run_case(cases["strided"], Tampering(_gap_write), "ascend910b")
    assert out.raw is Status.FAIL and "outside the output view" in out.reason


def test_unexpected_status_fails_with_message(cases):
    out = run_case(cases["contiguous"], Tampering(status=161002), "ascend910b")
    assert out.raw is Status.FAIL
    assert "phase-1 status 161002, expected 0" in out.reason and "check B1 failed" in out.reason


def test_invalid_case_passes_only_with_expected_status_and_check():
    """The AclnnBackend path is not needed to judge statuses: a scripted backend is enough."""
    _, loaded = load(_doc_path())
    case = next(c for c in loaded if c.kind == "invalid")
    scripted = SimpleNamespace(info=BackendInfo("aclnn", "fake", "0", "Ascend910B2", "ascend910b", True,
                                                details={"names_checks": True}),
                               reports_status=True, after_case=lambda: [],
                               run=lambda c, a: RunResult(status=161001, message="EZ1001: [x] check B1 failed: null"))
    assert run_case(case, scripted, "ascend910b").raw is Status.PASS
    scripted.run = lambda c, a: RunResult(status=161001, message="EZ1001: [x] check B2 failed: null")
    out = run_case(case, scripted, "ascend910b")
    assert out.raw is Status.FAIL and "raised by B2 instead of B1" in out.reason
    scripted.run = lambda c, a: RunResult(status=0)
    assert run_case(case, scripted, "ascend910b").raw is Status.FAIL


def test_leak_reported_by_backend_fails_case(cases):
    out = run_case(cases["contiguous"], Tampering(leak="2 live objects"), "ascend910b")
    assert out.raw is Status.FAIL and "2 live objects" in out.reason


def test_phase2_failure_fails_valid_case(cases):
    class Phase2(Tampering):
        def run(self, case, args):
            result = super().run(case, args)
            result.phase2_status, result.message = 507015, "EZ9999: AI Core exception"
            return result
    out = run_case(cases["contiguous"], Phase2(), "ascend910b")
    assert out.raw is Status.FAIL and "507015" in out.reason


def test_inputs_are_deterministic_per_case(cases):
    a, b = inputs.prepare(cases["contiguous"]), inputs.prepare(cases["contiguous"])
    for name in a:
        assert torch.equal(a[name], b[name])
    other = inputs.prepare(cases["strided"])
    assert not torch.equal(a["gradOutput"], other["gradOutput"])   # the seed follows the case id


def test_output_buffers_are_poisoned(cases):
    """The view holds NaN (anything never written fails the comparison); every other byte of the
    storage holds the case's guard pattern, none of it NaN."""
    from harness.inputs import guard
    prepared = inputs.prepare(cases["strided"])
    args = inputs.build_args(cases["strided"], prepared, tuple(prepared["self"].shape))
    out = next(a.value for a in args if a.is_output)
    assert torch.isnan(out.device_view).all()
    assert not torch.isnan(out.storage[~out.covered()]).any()
    assert out.guard is not None and guard.damage(out) is None


def _doc_path(_cache={}):
    if "p" not in _cache:
        import tempfile
        d = tempfile.mkdtemp()
        p = f"{d}/case.yaml"
        with open(p, "w") as f:
            yaml.safe_dump(BASE, f)
        _cache["p"] = p
    return _cache["p"]


def _past_the_tail(out):
    """A kernel that stores one element past the view's last element (a whole-block store)."""
    end = out.offset + sum((d - 1) * s for d, s in zip(out.dims, out.strides)) + 1
    out.storage[end] = 0.0


def test_write_past_the_end_of_a_contiguous_output_is_caught(cases):
    out = run_case(cases["contiguous"], Tampering(_past_the_tail), "ascend910b")
    assert out.raw is Status.FAIL and "outside the output view" in out.reason


def test_status0_scenario_must_run_phase2(cases):
    """An invalid scenario expecting 0 promises a working phase 2 and stream sync."""
    case = replace(cases["contiguous"], kind="invalid", mutation=None)
    good = SimpleNamespace(info=BackendInfo("aclnn", "fake", "0", "Ascend910B2", "ascend910b", True),
                           reports_status=True, after_case=lambda: [],
                           run=lambda c, a: RunResult(status=0, phase2_status=0, sync_status=0))
    assert run_case(case, good, "ascend910b").raw is Status.PASS
    good.run = lambda c, a: RunResult(status=0, phase2_status=0, sync_status=507015, message="EZ9999")
    out = run_case(case, good, "ascend910b")
    assert out.raw is Status.FAIL and "stream sync 507015" in out.reason
    good.run = lambda c, a: RunResult(status=0)          # phase 2 silently never ran
    assert run_case(case, good, "ascend910b").raw is Status.FAIL


def test_empty_case_must_report_workspace_0(cases):
    case = replace(cases["contiguous"], shape=(0, 3, 6, 6), name="basic[empty]")
    empty = Tampering()
    assert run_case(case, empty, "ascend910b").raw is Status.PASS

    class Workspace(Tampering):
        def run(self, c, args):
            result = super().run(c, args)
            result.workspace_size = 1024
            return result
    out = run_case(case, Workspace(), "ascend910b")
    assert out.raw is Status.FAIL and "workspace 1024, expected 0" in out.reason


class Launching(Tampering):
    """Reports `launches` kernels per phase 2 (None: a backend that cannot count them)."""

    def __init__(self, launches):
        super().__init__()
        self.launches = launches

    def run(self, c, args):
        result = super().run(c, args)
        result.launches = self.launches
        return result


def test_empty_case_must_launch_nothing(cases):
    case = replace(cases["contiguous"], shape=(0, 3, 6, 6), name="basic[empty]")
    out = run_case(case, Launching(0), "ascend910b")
    assert out.raw is Status.PASS and out.launches == 0 and not out.launches_note
    out = run_case(case, Launching(1), "ascend910b")
    assert out.raw is Status.FAIL and "launched 1 kernel, expected none" in out.reason
    # a non-empty case may launch what it needs
    assert run_case(cases["contiguous"], Launching(3), "ascend910b").raw is Status.PASS


def test_uncountable_launches_are_recorded_not_passed_silently(cases):
    case = replace(cases["contiguous"], shape=(0, 3, 6, 6), name="basic[empty]")
    out = run_case(case, Launching(None), "ascend910b")
    assert out.raw is Status.PASS and out.launches is None
    assert out.launches_note.startswith("launch count not observable")
    assert not run_case(cases["contiguous"], Launching(None), "ascend910b").launches_note


def test_real_sized_shape_is_a_descriptor_without_memory(cases):
    """A size-limit scenario (2^31+ elements) gets a tiny storage, negative dims and dtypes torch
    cannot hold are expressible, and nothing the size of the shape is allocated."""
    from harness.model import Mutation
    base = cases["contiguous"]
    huge = (1, 1, 46341, 46341)
    case = replace(base, kind="invalid", mutation=Mutation(tensors={"self": {"shape": huge},
                                                                    "gradInput": {"shape": huge},
                                                                    "gradOutput": {"shape": (2, 3, -1, 3)},
                                                                    "indices": {"dtype": "uint16"}}))
    prepared = inputs.prepare(case)
    args = {a.name: a for a in inputs.build_args(case, inputs.mutate(case, prepared), tuple(prepared["self"].shape))}
    for name, dims in (("self", huge), ("gradInput", huge), ("gradOutput", (2, 3, -1, 3))):
        t = args[name].value
        assert t.unbacked and t.dims == dims and t.storage.numel() * t.storage.element_size() <= 64, name
    assert args["indices"].value.unbacked and args["indices"].dtype == "uint16"
    assert args["self"].value.strides == (46341 * 46341, 46341 * 46341, 46341, 1)


class Flaky(Tampering):
    """Every second run nudges one element, as atomic adds in a varying order would."""

    def __init__(self, deterministic, flaky=True):
        super().__init__(fault=None)
        self.deterministic, self.flaky, self.runs = deterministic, flaky, 0

    def run(self, case, args):
        result = super().run(case, args)
        self.runs += 1
        if self.flaky and self.runs % 2 == 0:
            _nudge(result.outputs["gradInput"])
        return result


def test_deterministic_mode_runs_twice_and_catches_differing_bits(cases):
    flaky = Flaky(deterministic=True)
    out = run_case(cases["contiguous"], flaky, "ascend910b")
    assert flaky.runs == 2 and out.raw is Status.FAIL
    assert out.reason.startswith("nondeterministic: gradInput differs in 1 of ") and "deterministic mode is on" in out.reason
    steady = Flaky(deterministic=True, flaky=False)
    assert run_case(cases["contiguous"], steady, "ascend910b").raw is Status.PASS and steady.runs == 2
    # without deterministic mode nothing is promised: one run, and the same flaky library passes
    off = Flaky(deterministic=False)
    assert run_case(cases["contiguous"], off, "ascend910b").raw is Status.PASS and off.runs == 1


def test_op_documented_deterministic_is_checked_without_the_flag(cases):
    case = cases["contiguous"]
    case = replace(case, op=replace(case.op, deterministic_by_default=True))
    flaky = Flaky(deterministic=False)
    flaky.reports_status = True                 # an aclnn implementation, which the promise is about
    out = run_case(case, flaky, "ascend910b")
    assert flaky.runs == 2 and out.raw is Status.FAIL
    assert "documented deterministic by default" in out.reason
    reference = Flaky(deterministic=False)      # the torch reference backend is not held to it
    assert run_case(case, reference, "ascend910b").raw is Status.PASS and reference.runs == 1


def test_input_written_by_the_library_fails_the_case(cases):
    class Scratch(Tampering):
        def run(self, case, args):
            return replace(super().run(case, args), inputs_written=("gradOutput",))
    out = run_case(cases["contiguous"], Scratch(), "ascend910b")
    assert out.raw is Status.FAIL and out.reason.startswith("the library wrote into input gradOutput:")


def test_a_store_past_the_workspace_fails_the_case(cases):
    class Overrun(Tampering):
        def run(self, case, args):
            return replace(super().run(case, args), workspace_size=33024, workspace_overrun=64)
    out = run_case(cases["contiguous"], Overrun(), "ascend910b")
    assert out.raw is Status.FAIL and out.reason.startswith("the library wrote past the end of its workspace: 64 ")


@pytest.mark.parametrize("dtype", [torch.complex64, torch.complex128])
def test_complex_outputs_are_poisoned_in_both_parts(dtype):
    """A complex output (MaxUnpool3dBackward's UT feeds complex64/128 to see it refused) needs a
    poison too; NaN in the real part alone would let a library that writes only that part pass."""
    buf = torch.full((4,), inputs.poison(dtype), dtype=dtype)
    assert torch.isnan(buf.real).all() and torch.isnan(buf.imag).all()


def test_a_complex_gap_written_by_the_library_is_caught():
    """A complex output's gaps hold guard bytes too: one part of one gap element overwritten is caught."""
    from harness.inputs import guard, layout
    arg = layout.materialize("out", torch.full((2, 3), inputs.poison(torch.complex64), dtype=torch.complex64),
                             "ND", "strided", is_output=True, guard=4)
    guard.lay(arg, guard.Pattern("complex"))
    assert guard.damage(arg) is None
    gap = int(torch.nonzero(~arg.covered()[arg.offset:])[0]) + arg.offset
    arg.storage[gap] = complex(arg.storage[gap].real.item(), float("nan"))    # the imaginary part of a gap
    found = guard.damage(arg)
    assert found is not None and found.region == guard.STRIDE_GAP and found.offset == gap * 8 + 4
