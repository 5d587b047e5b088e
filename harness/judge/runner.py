"""Run one case on a backend and judge it: status, numerics, untouched memory."""
from __future__ import annotations

import contextlib
import re
import time
from pathlib import Path

import torch

from .. import inputs as inputs_mod
from ..backends.base import Backend, BackendInfo, LaunchFailed
from ..inputs import guard
from ..core.status import Status
from ..model import Case
from . import batch_slice, cache as cache_mod, compare, digest, perf as perf_mod, reasons
from .device_time import LaunchMeter
from .outcome import Outcome

# a section-B check (B9, B1.14, B26a) or a generic L0 label rule (L0.R1, L0.R2.cube; l0_format_rules.md)
_CHECK_IN_MESSAGE = re.compile(r"check ((?:B|L0\.)[\w.]+) failed")


def _outside_view_damage(arg, result) -> "guard.Damage | None":
    """Where a launch changed an output's storage outside its view (the guard bytes before the view,
    in its stride gaps, after its tail), or None. Only a launch can: a case whose phase 2 never ran,
    or an unbacked descriptor, has nothing to check."""
    if arg is None or arg.unbacked or result.phase2_status is None:
        return None
    return guard.damage(arg)


def run_case(case: Case, backend: Backend, family: str | None, cache: "cache_mod.GoldenCache | None" = None,
             capture: dict | None = None) -> Outcome:
    """Judge one case. `capture`, when given, receives its inputs, golden and actual outputs and
    the argument list the backend received (for --dump-failures)."""
    start = time.perf_counter()
    info: BackendInfo = backend.info
    out = Outcome(case.id, case.op.name, family=family, check=case.check, backend=info.target(),
                  started_at=time.time())
    metered = LaunchMeter(backend)      # every launch's time: how long the case kept its device busy
    try:
        with _mode_for(case, backend):
            return _judge(case, metered, family, out, cache, capture)
    finally:
        out.duration_s = time.perf_counter() - start
        out.device_s = metered.total


def _fail(out: Outcome, reason: str) -> Outcome:
    return out.fail(reason)


def _unsupported(case: Case, backend: Backend, family: str | None) -> str | None:
    """Why `backend` cannot judge `case`, or None."""
    if case.skip:
        return case.skip
    if family is not None and family in case.families and family not in case.status:
        return (f"no expected status on {family} for dtype {case.dtype}"
                + (f" with {case.index_dtype} indices" if case.index_dtype else "")
                + f" (no valid case of {case.op.name}'s case file runs it there)")
    if backend.reports_status:
        return None
    if case.kind == "invalid":
        return f"invalid-parameter case: {backend.info.backend} has no equivalent of aclnn phase-1 status codes"
    if not case.runs_numerics(family):
        return f"no numeric expectation on {family or 'any family'} (status-only case)"
    return None


class _Clock:
    """Adds the seconds since the last lap to out.timings[name]."""

    def __init__(self, out: Outcome):
        self.out, self.t = out, time.perf_counter()

    def lap(self, name: str) -> None:
        now = time.perf_counter()
        self.out.timings[name] = self.out.timings.get(name, 0.0) + now - self.t
        self.t = now


def _judge(case: Case, backend: Backend, family: str | None, out: Outcome, cache,
           capture: dict | None = None) -> Outcome:
    skip = _unsupported(case, backend, family)
    if skip:
        out.raw, out.reason = Status.SKIP, skip
        return out
    clock = _Clock(out)
    # a round of the perf gate's A/B re-measurement (reporting/perf/ab.py) was judged in its own
    # attempt: it times the kernel on fresh inputs, with no golden computed and no verdict
    timing_only = perf_mod.PerfSettings.of(case.perf).timing_only if case.perf else False
    numerics = case.runs_numerics(family) and not timing_only
    out.expected_status = case.expected_status(family)
    try:
        made = cache_mod.materials(case, numerics, cache)   # inputs drawn and golden computed, or both read
    except ValueError as e:
        # the golden's own checks (a shape or attribute no valid call has): the case is wrong, not
        # the library, and the reason must send the reader to the case file
        return _fail(out, f"case error, no library call made: the golden cannot prepare group {case.group!r} "
                          f"of {Path(case.op.path).name} ({e})")
    clock.lap("golden")
    prepared, expected = made.prepared, made.expected
    inputs = inputs_mod.mutate(case, prepared)
    args = inputs_mod.build_args(case, inputs, tuple(prepared[case.op.output_like].shape))
    clock.lap("inputs")
    if timing_only:
        _measure(case, backend, inputs, prepared, out)
        clock.lap("perf")
        return out
    if capture is not None:
        capture.update(inputs=dict(inputs), golden=expected, args=args)     # args: for the C reproducer
    relaunch = (case.relaunch or getattr(backend, "relaunch_all", False)) and getattr(backend, "repeatable_executors", False)
    try:
        result = backend.run(case.op.descriptor, args, relaunch=True) if relaunch else \
            backend.run(case.op.descriptor, args)
    finally:
        # even when run() raised: a leak must be blamed on this case, not the next one
        out.problems = backend.after_case()
        clock.lap("run")
    out.timings.update(result.timings)           # phase 1 / phase 2, where the backend splits them
    if capture is not None:
        capture["actual"] = {p.name: result.outputs[p.name].logical for p in case.op.params
                             if p.output and p.name in result.outputs}
    out.phase1_status, out.message, out.workspace_size = result.status, result.message, result.workspace_size
    out.phase2_status, out.sync_status = result.phase2_status, result.sync_status
    out.launch_s, out.launches = result.launch_s, result.launches
    if result.status == 0 and result.phase2_status is not None:     # what the library wrote
        out.digests = {name: digest.of_arg(arg) for name, arg in result.outputs.items() if not arg.unbacked}
    if out.problems:
        return _fail(out, "; ".join(out.problems))
    if out.expected_status is not None and result.status != out.expected_status:
        return _fail(out, f"phase-1 status {result.status}, expected {out.expected_status}"
                          + (f" [{case.check}]" if case.check else "") + (f": {result.message}" if result.message else ""))
    if out.expected_status and case.check and info_names_checks(backend.info):
        named = _CHECK_IN_MESSAGE.search(result.message or "")
        if not named or named.group(1) != case.check:
            return _fail(out, f"status {result.status} as expected, but raised by "
                              f"{named.group(1) if named else 'an unnamed check'} instead of {case.check}: {result.message}")
    broken = _status0_promise(case, result, inputs, out)
    if broken:
        return _fail(out, broken)
    broken, verdict = _launch_broken(case, expected if numerics else None, result, clock)
    if verdict is not None:
        out.verdict = verdict.to_dict()
    if broken:
        return _fail(out, broken)
    if relaunch and result.status == 0 and not result.not_run:      # a second launch to judge
        broken = _second_launch_broken(case, expected if numerics else None, result.second, out)
        clock.lap("relaunch")
        if broken:
            return _fail(out, f"{reasons.RELAUNCH}: {broken}")
    if not numerics:
        return out
    promise = _determinism_promised(case, backend)
    if promise:
        again = inputs_mod.build_args(case, inputs, tuple(prepared[case.op.output_like].shape))
        differs = _second_run_differs(case, backend, again, result, promise)
        clock.lap("repeat")
        if differs:
            return _fail(out, differs)
    inconsistent = batch_slice.check(case, backend, family, inputs, result, bool(promise), out)   # level 3
    if isinstance((out.determinism or {}).get("batch_slice"), dict):      # a slice was run
        clock.lap("batch_slice")
    if inconsistent:
        return _fail(out, inconsistent)
    if _timed(case, backend):
        _measure(case, backend, inputs, prepared, out)
        clock.lap("perf")
    return out


def _timed(case: Case, backend: Backend) -> bool:
    """Whether a passing case is timed: --perf, or its group's `perf:` (on a backend that can)."""
    return (case.perf is not None or getattr(backend, "perf_all", False)) and hasattr(backend, "measure")


def _measure(case: Case, backend: Backend, inputs: dict, prepared: dict, out: Outcome) -> None:
    """Perf mode, once the case passed: its kernel timed on fresh buffers (judge/perf.py) into
    out.perf. A timed launch that fails fails the case: the library broke on a launch of an
    executor it made repeatable, which it must take. An empty input launches nothing to time."""
    if any(isinstance(t, torch.Tensor) and t.numel() == 0 for t in inputs.values()):
        return
    args = inputs_mod.build_args(case, inputs, tuple(prepared[case.op.output_like].shape))
    info = backend.info
    try:
        out.perf = perf_mod.measure(backend, case.op.descriptor, args, perf_mod.PerfSettings.of(case.perf),
                                    info.family or "", info.soc_name or "")
    except LaunchFailed as e:
        # a runtime status leaves the device in doubt: the worker resets it (Outcome.needs_recovery)
        out.phase2_status, out.sync_status = e.phase2_status or out.phase2_status, e.sync_status or out.sync_status
        out.fail(f"{perf_mod.FAILED}: {e}")
    finally:
        problems = backend.after_case()
    if problems:            # a leak of the timed launches' objects is this case's too
        out.problems += problems
        if out.raw is Status.PASS:
            out.fail(f"{perf_mod.FAILED}: {'; '.join(problems)}")


def _launch_broken(case: Case, expected: dict | None, result, clock: _Clock | None = None):
    """What one launch did that a correct one never does, in this order: stored past its workspace,
    wrote into an input, changed an output's guard bytes outside its view, failed the comparison with the golden
    `expected` (not made when None: a status-only case). Returns (the reason or None, the last
    verdict made or None); the first launch and a repeatable executor's second are held to it alike."""
    if result.workspace_overrun:
        return (f"{reasons.WORKSPACE_OVERRUN}: {result.workspace_overrun} of the guard bytes after the "
                f"{result.workspace_size} bytes phase 1 asked for changed"
                + (f": {result.workspace_damage}" if result.workspace_damage else "")), None
    if result.inputs_written:
        return (f"{reasons.WROTE_INTO_INPUT} {', '.join(result.inputs_written)}: its device buffer changed "
                f"during phase 2 (aclnn inputs are const)"), None
    verdict = None
    for p in case.op.params:
        if not p.output:
            continue
        damage = _outside_view_damage(result.outputs.get(p.name), result)
        if damage is not None:
            return f"{p.name}: the library {reasons.OUTSIDE_VIEW}: {damage}", verdict
        if expected is None:
            continue
        arg = result.outputs[p.name]
        verdict = compare.compare(case.standard, expected[p.name], arg.logical, case.dtype_of(p))
        if clock is not None:
            clock.lap("compare")
        if not verdict.passed:
            return f"{p.name}: {verdict.summary()}", verdict
    return None, verdict


def _second_launch_broken(case: Case, expected: dict | None, second, out: Outcome) -> str | None:
    """What the second launch of a repeatable executor got wrong (or None): it ran on the same
    buffers, its outputs set back to their poison, with a workspace of its own, so it is held to
    everything the first launch was (_launch_broken); a failing comparison becomes `out.verdict`,
    so the report shows that launch's metrics."""
    if second is None:
        return "not run (the backend returned no second launch)"
    if second.runtime_failed:
        return f"phase 2 status {second.phase2_status}, stream sync {second.sync_status}: {second.message}"
    if second.stale_workspace:
        return (f"wrote into the first launch's workspace ({second.stale_workspace} bytes changed), not into "
                f"the one it was given: the executor kept the first workspace's address")
    broken, verdict = _launch_broken(case, expected, second)
    if broken and verdict is not None and not verdict.passed:
        out.verdict = verdict.to_dict()
    return broken


def _mode_for(case: Case, backend: Backend):
    """Deterministic mode for a case of a `deterministic: true` group, where the run is not in it
    already; the backend restores the previous setting afterwards (a no-op off aclnn)."""
    if case.deterministic and not getattr(backend, "deterministic", False) and hasattr(backend, "deterministic_mode"):
        return backend.deterministic_mode()
    return contextlib.nullcontext()


def _determinism_promised(case: Case, backend: Backend) -> str | None:
    """Why the same inputs must give the same bits here, or None: deterministic mode is on
    (--deterministic, or the case's group asks for it), or the op's documentation says it is
    deterministic by default."""
    if getattr(backend, "deterministic", False):
        return "deterministic mode is on"
    if case.deterministic and backend.reports_status:
        return "the case runs in deterministic mode (its group sets it)"
    if case.op.deterministic_by_default and backend.reports_status:
        return f"{case.op.name} is documented deterministic by default"
    return None


def _bits(t: torch.Tensor) -> torch.Tensor:
    """The tensor's elements as integers of the same width (NaN payloads and -0.0 count)."""
    if not t.dtype.is_floating_point:
        return t
    return t.view({8: torch.int64, 4: torch.int32, 2: torch.int16, 1: torch.int8}[t.element_size()])


def _second_run_differs(case: Case, backend: Backend, args, first, promise: str) -> str | None:
    """Run the case again on fresh buffers and compare every output's storage bit for bit with
    the first run (atomic adds in a varying order are the usual cause of a difference)."""
    try:
        again = backend.run(case.op.descriptor, args)
    finally:
        problems = backend.after_case()
    if problems:
        return f"second run (determinism check): {'; '.join(problems)}"
    if (again.status, again.phase2_status, again.sync_status) != (first.status, first.phase2_status, first.sync_status):
        return (f"second run (determinism check) ended differently: phase-1 status {again.status}, phase 2 "
                f"{again.phase2_status}, sync {again.sync_status} (first run: {first.status}, "
                f"{first.phase2_status}, {first.sync_status}): {again.message}")
    for name, arg in first.outputs.items():
        a, b = arg.storage, again.outputs[name].storage
        changed = _bits(a) != _bits(b)
        if changed.any():
            delta = (a[changed].double() - b[changed].double()).abs().nan_to_num(nan=float("inf")).max().item()
            return (f"{reasons.NONDETERMINISTIC} {name} differs in {int(changed.sum())} of {a.numel()} elements between "
                    f"two runs with the same inputs (largest difference {delta:.3g}); {promise}")
    return None


LAUNCHES_NOT_OBSERVABLE = "launch count not observable: the backend offers no kernel-launch counter"


def _status0_promise(case: Case, result, inputs: dict, out: Outcome) -> str | None:
    """What a status-0 phase 1 promises: phase 2 and the stream sync succeed; with an empty input,
    the workspace is 0 and nothing is launched (spec B: empty tensors return early). None when
    kept (or not applicable). Where launches cannot be counted (a real CANN), `out.launches_note`
    says so in the record instead of that half passing silently."""
    if result.status != 0:
        return None
    if result.not_run:
        if case.kind == "valid":       # a valid case must run; only scenarios may stop after phase 1
            return f"phase 2 not run: {result.not_run}"
        return None
    if result.phase2_status is None or result.runtime_failed:
        return (f"phase 1 returned 0 but phase 2 status {result.phase2_status}, stream sync "
                f"{result.sync_status}: {result.message}")
    empty = [n for n, t in inputs.items() if isinstance(t, torch.Tensor) and t.numel() == 0]
    if not empty:
        return None
    if result.workspace_size:
        return f"empty {', '.join(empty)}: phase 1 returned workspace {result.workspace_size}, expected 0"
    if result.launches is None:
        out.launches_note = LAUNCHES_NOT_OBSERVABLE
    elif result.launches:
        return (f"empty {', '.join(empty)}: phase 2 launched {result.launches} kernel"
                f"{'s' if result.launches != 1 else ''}, expected none (empty inputs return early)")
    return None


def info_names_checks(info: BackendInfo) -> bool:
    """Only the software CANN names the failed check in its message; real CANN does not."""
    return bool(info.details.get("names_checks"))
