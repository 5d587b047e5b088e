"""The aclnn backend: runs each case through a CANN's two-phase aclnn API via ctypes.

With no CANN installed it builds and uses the software CANN (swcann/), and
says so everywhere: BackendInfo.simulated, details.software_cann, a stderr
warning. --no-sw-fallback turns that fallback into an error.
"""
from __future__ import annotations

import ctypes
import dataclasses
import os
import sys
import time
from typing import TYPE_CHECKING

from ..core import dtypes, families
from ..target import discovery as environment
from ..target.settings import BackendSettings
from ..acl import abi, events, loader, meminfo, runtime, setenv
from ..acl.objects import CaseObjects, alloc_size
from ..core.errors import HarnessConfigError
from ..model import OpDescriptor
from . import aclnn_perf
from .base import BackendInfo, RunResult

if TYPE_CHECKING:
    from ..inputs import Arg

SWCANN_WARNING = "SOFTWARE CANN: results are simulated, not hardware"
WORKSPACE_FILL = 0xFF       # every byte of the workspace before phase 2: NaN in fp32, fp16 and bf16
# Guard bytes after the workspace, from its 32-byte-rounded end (a kernel storing whole 32-byte
# blocks may touch the rounding, which every allocator gives): a store beyond is an overrun. They
# hold the case's exact guard pattern (harness/inputs/guard.py), compared byte for byte
WORKSPACE_GUARD = 256
_warned = False


def _warn_software(path, why: str | None) -> None:
    global _warned
    if not _warned:
        _warned = True
        print(f"*** {SWCANN_WARNING} ({path}) ***" + (f"\n*** {why} ***" if why else ""), file=sys.stderr, flush=True)


def _export_cann_env(root) -> None:
    """What set_env.sh would export, where the user did not (spec 1.5, 1.6): nnopbase finds its
    kernels through ASCEND_HOME_PATH/opp_latest or ASCEND_OPP_PATH (else 561107 at phase 1)."""
    os.environ.setdefault("ASCEND_HOME_PATH", str(root))
    if (root / "opp").is_dir():
        os.environ.setdefault("ASCEND_OPP_PATH", str(root / "opp"))


def find_libraries(no_sw_fallback: bool) -> tuple[loader.Libraries, loader.Discovery, str | None]:
    """The chosen CANN (environment.choose_root: the software CANN when none is installed), loaded once
    its set_env.sh is known to be applied. Returns (libs, discovery, why the software CANN was built or None)."""
    found, fallback = environment.choose_root(no_sw_fallback)
    setenv.require_applied(found.root)       # one line naming the set_env.sh to source, never a dlopen traceback
    return loader.load(found), found, fallback


class AclnnBackend:
    reports_status = True       # valid and invalid cases both run: phase-1 statuses are the contract
    repeatable_executors = True  # run(relaunch=True): aclSetAclOpExecutorRepeatable, phase 2 twice

    def __init__(self, config):
        config = BackendSettings.from_wire(config)
        libs, found, fallback = find_libraries(config.no_sw_fallback)
        software = libs.is_software_cann
        if software and config.no_sw_fallback:
            raise HarnessConfigError(f"--no-sw-fallback: {libs.runtime_path} is the software CANN "
                                     f"(it exports swcannGetStats), not a hardware CANN")
        requested = config.family
        _export_cann_env(libs.root)      # the software CANN, like nnopbase, wants its kernel directory
        if software:
            environment.hand_over_soc(requested)        # SWCANN_SOC, before its aclInit
            _warn_software(libs.runtime_path, fallback)
        self.libs = libs
        self.relaunch_all = config.relaunch     # --relaunch: every case's executor twice
        self.perf_all = config.perf             # --perf: every passing case timed
        shared = runtime.current() is not None     # another backend of this process opened ACL already
        slot = config.slot if config.slot is not None else runtime.worker_slot(config.worker)
        self.session = runtime.open_session(libs, config.device, slot, config.level)
        self.timing_source = events.timing_source(libs)               # read once ACL is initialised
        self.timing = aclnn_perf.timing_label(self.timing_source)
        try:
            family = self._check_soc(requested, software)
        except HarnessConfigError:
            if not shared:
                runtime.close_session()     # leave the process as we found it
            raise
        # the leak check a real CANN allows too: free device memory before and after each case
        self._memory = meminfo.MemoryWatch(libs, lambda: libs.runtime.aclrtSynchronizeStream(self.session.stream))
        self._launched: set[tuple] = set()  # (op, tensor dtypes) launched in this process: kernels loaded
        self._first_launch = False          # the current case launched a kernel for the first time
        self.info = BackendInfo("aclnn", str(libs.pooling_library), f"npu:{self.session.device_id}",
                                self.session.soc_name, family, simulated=software,
                                version=loader.cann_version(libs.root), details=self._details(found, fallback))
        self._entry_points: dict[str, tuple] = {}
        self._pending_problems: list[str] = []
        self._baseline = self._live_counts() if software else None
        # optional: a real CANN has no in-process launch counter (its profiler writes files), so
        # on one every RunResult.launches stays None and the runner records "not observable"
        self._launch_counter = getattr(libs.runtime, "swcannGetKernelLaunches", None)

    # ------------------------------------------------------------ contract

    def run(self, op: OpDescriptor, args: list[Arg], relaunch: bool = False) -> RunResult:
        """Phase 1, then phase 2 when phase 1 succeeds. `relaunch`: the executor is made repeatable
        and launched a second time on the same buffers (outputs set back to their poison) with a
        workspace of its own; that launch's result is `second`."""
        null_out = {a.name for a in args if a.kind == "out_pointer"}
        args = [a for a in args if a.kind != "out_pointer"]
        phase1, phase2 = self._entry(op, [a.kind for a in args])
        self.session.ensure_thread()
        runtime.recent_error(self.libs)   # drain, so a failure below reports only its own text
        outputs = {a.name: a.value for a in args if a.kind == "tensor" and a.is_output and a.value is not None}
        kernel = (op.aclnn, tuple(a.dtype for a in args if a.kind == "tensor"))
        objs = CaseObjects(self.libs)
        try:
            with objs:              # releases every object on every path, in reverse order
                result = self._run(objs, phase1, phase2, args, outputs, null_out, relaunch)
        finally:
            self._pending_problems += [f"release failed: {p}" for p in objs.problems]
        if result.phase2_status is not None:
            self._first_launch = self._first_launch or kernel not in self._launched
            self._launched.add(kernel)
        return result

    def _run(self, objs: CaseObjects, phase1, phase2, args, outputs, null_out=frozenset(),
             relaunch: bool = False) -> RunResult:
        libs = self.libs
        c_args, device_out, device_in = [], {}, {}
        for a in args:
            if a.kind == "tensor":
                if a.value is None:
                    c_args.append(None)                     # NULL aclTensor*
                    continue
                handle, dev = objs.tensor(a.value, self._acl_dtype(a))
                c_args.append(handle)
                if a.is_output:
                    device_out[a.name] = dev
                else:
                    device_in[a.name] = (dev, a.value.storage)
            elif a.kind == "int_array":
                c_args.append(None if a.value is None else objs.int_array(a.value, a.name))
            elif a.kind in abi.PARAM_CTYPES:
                c_args.append(a.value)                      # by value; argtypes give the C width
            else:
                raise ValueError(f"unknown argument kind {a.kind!r} for {a.name}")
        workspace_size, executor = ctypes.c_uint64(0), ctypes.c_void_p()
        t0 = time.perf_counter()
        status = phase1(*c_args, None if "workspaceSize" in null_out else ctypes.byref(workspace_size),
                        None if "executor" in null_out else ctypes.byref(executor))
        timings = {"phase1": time.perf_counter() - t0}
        if status != 0:
            return RunResult(status, runtime.recent_error(libs), outputs=outputs, timings=timings)
        if null_out:    # success without out-pointers: nothing to run; an executor written all the same is freed
            objs.unused_executor(executor.value)
            return RunResult(status, outputs=outputs, timings=timings,
                             not_run=f"NULL {', '.join(sorted(null_out))} passed to phase 1")
        unbacked = [a.name for a in args if a.kind == "tensor" and a.value is not None and a.value.unbacked]
        if unbacked:
            # descriptors over a tiny storage: a kernel must never run on them
            objs.unused_executor(executor.value)
            return RunResult(status, outputs=outputs, timings=timings,
                             not_run=f"{', '.join(unbacked)} unbacked (descriptors without memory)")
        if relaunch:
            try:
                objs.repeatable(executor.value)
            except runtime.AclCallError:
                objs.unused_executor(executor.value)
                raise
            fresh = {name: outputs[name].storage.clone() for name in device_out}   # what each launch starts from
        workspace, guard_at = None, alloc_size(workspace_size.value)
        tail = workspace_guard_pattern(outputs)
        if workspace_size.value > 0:
            try:
                workspace = _guarded_workspace(objs, guard_at, tail)
            except runtime.AclCallError:
                if not relaunch:
                    objs.unused_executor(executor.value)
                raise
        launch = _Launch(self, objs, phase2, executor.value, workspace_size.value, device_out, device_in, tail)
        first = launch.run(status, outputs, timings, workspace)
        if not relaunch or first.runtime_failed:
            return first
        # the same executor again, on buffers set back to what the first launch found (a launch that
        # leaves an output untouched shows as poison, not as the first launch's result) ...
        first.outputs = {name: dataclasses.replace(arg, storage=arg.storage.clone()) for name, arg in outputs.items()}
        for name, dev in device_out.items():
            objs.upload_into(dev, fresh[name])
            outputs[name].storage.copy_(fresh[name])
        # ... and with a workspace of its own (a caching allocator hands each launch whatever block
        # is free): the first one, refilled, must stay untouched, or the library kept its address
        again = None
        if workspace is not None:
            objs.fill(workspace, guard_at + WORKSPACE_GUARD, WORKSPACE_FILL)
            again = _guarded_workspace(objs, guard_at, tail)
        first.second = launch.run(status, outputs, {}, again)
        if workspace is not None:
            old = objs.read(workspace, guard_at + WORKSPACE_GUARD)
            first.second.stale_workspace = len(old) - old.count(WORKSPACE_FILL)
        return first

    @property
    def deterministic(self) -> int:
        """The determinism level the run set (0: off; --deterministic is 1): the runner checks it holds."""
        return self.session.deterministic

    def deterministic_mode(self):
        """Deterministic mode for one case (a `deterministic: true` group), restored after."""
        return runtime.deterministic_mode(self.libs)

    def measure(self, op: OpDescriptor, args: list[Arg], loop) -> dict:
        """Perf mode: the case's kernel launched and timed as often as loop(launch) decides
        (aclnn_perf.measure: a repeatable executor, ACL events on the case's stream)."""
        return aclnn_perf.measure(self, op, args, loop)

    def after_case(self) -> list[str]:
        problems, self._pending_problems = self._pending_problems, []
        problems += self._counted_leaks()
        leak = self._memory.after_case(self._first_launch)
        self._first_launch = False
        return problems + ([leak] if leak else [])

    def _counted_leaks(self) -> list[str]:
        """What the software CANN's own counters (swcannGetStats) say the case left alive."""
        problems: list[str] = []
        if self._baseline is None:
            return problems
        now = self._live_counts()
        allocs, nbytes, objects = (n - b for n, b in zip(now, self._baseline))
        self._baseline = now          # report a leak once, at the case that caused it
        if objects > 0 or allocs > 0:
            parts = []
            if objects > 0:
                parts.append(f"{objects} live object{'s' if objects != 1 else ''}")
            if allocs > 0:
                parts.append(f"{allocs} live device allocation{'s' if allocs != 1 else ''} ({nbytes} bytes)")
            problems.append(f"software CANN reports {' and '.join(parts)} after the case")
        return problems

    def recover(self) -> str:
        """After a runtime error: a clean device in this process. Returns what was done;
        raises (AclCallError, HarnessConfigError) when the device cannot be recovered."""
        self.session.reset()
        self._memory.rebase()       # a reset frees the device's memory: the next case starts from here
        return f"aclrtResetDevice({self.session.device_id}) + aclrtSetDevice({self.session.device_id})"

    def close(self) -> None:
        runtime.close_session()

    # ------------------------------------------------------------ helpers

    def _details(self, found: loader.Discovery, fallback: str | None) -> dict:
        libs, software = self.libs, self.libs.is_software_cann
        details = {**libs.paths(), "root_source": found.source, "software_cann": software,
                   # only the software CANN names the failed check ("check B9 failed") in its messages
                   "names_checks": software, "deterministic": bool(self.session.deterministic),
                   "determinism_level": int(self.session.deterministic), "relaunch": self.relaunch_all,
                   "device_count": self.session.device_count, "leak_check_meminfo": self._memory.describe(),
                   "ASCEND_OPP_PATH": os.environ.get("ASCEND_OPP_PATH")}
        details.update(setenv.facts(libs.root))            # which set_env.sh, how applied, the variables
        details.update({f"deterministic_{scope}": value
                        for scope, value in self.session.deterministic_options.items()})
        if software:
            details["software_cann_built"] = fallback is not None
            if fallback:
                details["fallback_reason"] = fallback
            details["swcann_version"] = (libs.runtime.swcannVersion() or b"").decode("utf-8", errors="replace")
            details["SWCANN_SOC"] = os.environ.get("SWCANN_SOC")
        details.update(timing=self.timing, timing_source=self.timing_source, perf=self.perf_all)
        return details

    def _check_soc(self, requested: str | None, software: bool) -> str:
        """The family of the SoC the library reports; it must be the --soc family when one was given."""
        soc = self.session.soc_name
        try:
            family = families.family_of_soc_name(soc)
        except families.UnknownSocError as e:
            raise HarnessConfigError(f"{self.libs.runtime_path}: {e}") from None
        if requested and requested != family:
            raise HarnessConfigError(f"library reports SoC {soc} (family {family}) but --soc {requested} was requested"
                                     + (" (the software CANN takes its SoC from SWCANN_SOC="
                                        f"{os.environ.get('SWCANN_SOC')})" if software else ""))
        return family

    def _live_counts(self) -> tuple[int, int, int]:
        allocs, nbytes, objects = ctypes.c_int64(), ctypes.c_int64(), ctypes.c_int64()
        self.libs.runtime.swcannGetStats(ctypes.byref(allocs), ctypes.byref(nbytes), ctypes.byref(objects))
        return allocs.value, nbytes.value, objects.value

    def _launches(self) -> int | None:
        """Kernels launched by this process so far, or None where the library cannot say."""
        if self._launch_counter is None:
            return None
        count = ctypes.c_uint64()
        if self._launch_counter(ctypes.byref(count)) != 0:
            runtime.recent_error(self.libs)     # drained: it must not be read as the case's message
            return None
        return count.value

    @staticmethod
    def _acl_dtype(arg: Arg) -> int:
        return dtypes.lookup(arg.dtype).acl

    def _entry(self, op: OpDescriptor, kinds: list[str]):
        """Phase-1 and phase-2 functions of an op, with argtypes from its parameters' kinds."""
        cached = self._entry_points.get(op.aclnn)
        if cached is not None:
            return cached
        phase1 = self.libs.op_function(op.aclnn + "GetWorkspaceSize")
        phase2 = self.libs.op_function(op.aclnn)
        if phase1 is None or phase2 is None:
            raise HarnessConfigError(f"{op.aclnn}GetWorkspaceSize / {op.aclnn} not exported by "
                                     f"{', '.join(map(str, self.libs.opapi_paths))}")
        phase1.argtypes = abi.phase1_argtypes(kinds)
        phase1.restype = abi.PHASE1_RESTYPE
        phase2.argtypes, phase2.restype = abi.PHASE2_ARGTYPES, abi.PHASE2_RESTYPE
        self._entry_points[op.aclnn] = (phase1, phase2)
        return phase1, phase2


def workspace_guard_pattern(outputs: dict):
    """The pattern of the workspace's tail guard: the case's own, as its outputs' guards are (an
    argument list built without them gets a fixed one)."""
    from ..inputs import guard          # torch comes with the inputs layer: never in the pytest process
    seeded = next((arg.guard for arg in outputs.values() if arg.guard is not None), None)
    return seeded.sibling("workspace") if seeded is not None else guard.Pattern("workspace")


def _guarded_workspace(objs: CaseObjects, guard_at: int, tail) -> int:
    """A workspace of `guard_at` bytes (its size rounded up) filled with WORKSPACE_FILL, then
    WORKSPACE_GUARD bytes of the pattern `tail`. The fill makes a kernel that sums into workspace it
    never cleared fail visibly, whatever the allocator hands out (fresh device memory is often zero,
    which would hide it; torch_npu's caching allocator returns old data)."""
    import torch
    workspace = objs.filled_buffer(guard_at + WORKSPACE_GUARD, WORKSPACE_FILL)
    objs.upload_into(workspace + guard_at, torch.from_numpy(tail.at(0, WORKSPACE_GUARD).copy()))
    return workspace


class _Launch:
    """Phase 2 of one executor on the case's buffers, then what it did to them: the outputs
    downloaded, inputs read back (const), the workspace's guard bytes checked."""

    def __init__(self, backend: AclnnBackend, objs: CaseObjects, phase2, executor: int, workspace_size: int,
                 device_out: dict, device_in: dict, tail):
        self.backend, self.objs, self.phase2, self.executor = backend, objs, phase2, executor
        self.workspace_size = workspace_size
        self.device_out, self.device_in = device_out, device_in
        self.tail = tail                # the workspace's guard pattern (workspace_guard_pattern)

    def run(self, status: int, outputs: dict, timings: dict, workspace: int | None) -> RunResult:
        """One phase-2 call with `workspace` (its guard bytes follow its rounded end)."""
        backend, objs, libs = self.backend, self.objs, self.backend.libs
        launches_before = backend._launches()
        t0 = time.perf_counter()
        p2 = self.phase2(workspace, self.workspace_size, self.executor, backend.session.stream)
        messages = [runtime.recent_error(libs)] if p2 != 0 else []
        sync = libs.runtime.aclrtSynchronizeStream(backend.session.stream)   # also surfaces asynchronous kernel errors
        timings["phase2"] = launch_s = time.perf_counter() - t0             # launch + stream sync
        launches_after = backend._launches()
        launches = None if launches_before is None or launches_after is None else launches_after - launches_before
        if sync != 0:
            messages.append(runtime.recent_error(libs))
        written: tuple[str, ...] = ()
        damage = None
        if p2 == 0 and sync == 0:
            for name, dev in self.device_out.items():
                objs.download(dev, outputs[name].storage)
            written = tuple(name for name, (dev, storage) in self.device_in.items() if not objs.unchanged(dev, storage))
            if workspace is not None:
                damage = self._tail_damage(workspace)
        message = "\n".join(m for m in dict.fromkeys(messages) if m)
        return RunResult(status, message, p2, sync, outputs, timings, workspace_size=self.workspace_size,
                         launch_s=launch_s, launches=launches, inputs_written=written,
                         workspace_overrun=damage.changed if damage else 0, workspace_damage=str(damage or ""))

    def _tail_damage(self, workspace: int):
        """The first byte of the workspace's tail guard the launch changed (guard.Damage), or None."""
        import numpy as np
        from ..inputs import guard
        at = alloc_size(self.workspace_size)
        found = np.frombuffer(self.objs.read(workspace + at, WORKSPACE_GUARD), dtype=np.uint8)
        return guard.first_change(guard.WORKSPACE_TAIL, found, self.tail.at(0, WORKSPACE_GUARD), at)
