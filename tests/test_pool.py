"""Several case workers behind one pytest process (harness/execution/pool.py, --case-workers):
the same verdicts as one worker, each worker's faults its own, every deadline kept while
another worker's case is awaited, and a lost device costing only its own worker."""
from __future__ import annotations

import pytest

from harness.execution.pool import CasePool
from harness.operators import load_case_file
from tests.robust_cases import EXECUTOR_SETTINGS as SETTINGS, flat, write_cases
from tests.test_robust import DEADLINE_S, _faults, _pytest, _records


def _comparable(record: dict) -> dict:
    """What must not depend on how many workers ran the case (not which worker, nor timings)."""
    keep = ("case_id", "status", "reason", "outcome", "max_abs_error", "max_rel_error", "phase1_status",
            "phase2_status", "mismatches", "expected_status")
    return {k: record.get(k) for k in keep}


def test_two_case_workers_give_the_verdicts_of_one(tmp_path):
    write_cases(tmp_path, channels=[1, 2], sides=(4, 6, 8))
    runs = {}
    for workers in ("1", "2"):
        code, out, _ = _pytest(tmp_path, "-q", "-n", "0", "--case-workers", workers, report=f"rep{workers}")
        assert code == 0, out
        runs[workers] = _records(tmp_path / f"rep{workers}")
    assert [_comparable(r) for r in runs["1"]] == [_comparable(r) for r in runs["2"]]
    assert {r["worker"] for r in runs["1"]} == {"main"}
    used = {r["worker"] for r in runs["2"]}
    assert used == {"main.0", "main.1"}, used              # both did work
    assert len(runs["2"]) == len({r["case_id"] for r in runs["2"]})    # one record per case


def test_each_case_worker_takes_its_own_device(tmp_path):
    """With as many devices as case workers (here two simulated ones), worker k opens device k,
    and every record says which device ran it."""
    write_cases(tmp_path, channels=[1], sides=(4, 6, 8))
    code, out, _ = _pytest(tmp_path, "-q", "-n", "0", "--case-workers", "2", env={"SWCANN_DEVICE_COUNT": "2"})
    assert code == 0, out
    devices = {(r["worker"], r["backend"]["device"]) for r in _records(tmp_path / "rep")}
    assert devices == {("main.0", "npu:0"), ("main.1", "npu:1")}, devices


def test_case_workers_is_checked(tmp_path):
    write_cases(tmp_path, channels=[1], sides=(4,))
    for bad in ("0", "-2", "many"):
        code, out, _ = _pytest(tmp_path, "-q", "-n", "0", "--case-workers", bad)
        assert code == 4 and f"--case-workers: a number >= 1 or 'auto', got '{bad}'" in out, out
    # a thousand once passed select()'s descriptor limit: an INTERNALERROR and no report
    code, out, _ = _pytest(tmp_path, "-q", "-n", "0", "--case-workers", "1000")
    assert code == 4 and "--case-workers: at most 64 per pytest process, got 1000" in out, out


def test_n_auto_is_the_suites_rule_when_the_plugin_is_loaded_with_p(tmp_path):
    """./run suite loads the plugin with -p, which registers it before xdist: xdist's own -n auto
    (a worker per core) once won and ./run suite ran 1.37x slower than -n 0. Off hardware -n auto
    is no xdist at all, and the case workers are the pool's."""
    write_cases(tmp_path, channels=[1], sides=(4,))
    code, out, _ = _pytest(tmp_path, "-n", "auto", "-k", "before")
    assert code == 0, out
    assert "workers [" not in out and "case workers: " in out and " per pytest process (auto" in out, out


def _cases(tmp_path, **kw):
    _, cases = load_case_file(write_cases(tmp_path, channels=[1], sides=(4, 6), **kw))
    regular = [c for c in cases if c.group in ("before", "after")]
    return regular, {c.group: c for c in cases if c.group not in ("before", "after")}


def test_a_hang_in_one_worker_is_a_timeout_on_time_while_another_is_awaited(tmp_path, monkeypatch):
    """Two hangs sent ahead, one to each worker, with deadlines of 2 s and 5 s. pytest asks for the
    5 s one first: while it waits, the 2 s hang's deadline passes and is kept (its TIMEOUT is
    taken then, not when asked for), so both cost about 5 s together, not 7. The cases queued
    behind the hangs run again on fresh workers and pass.

    Said in order of events, not in seconds (a busy machine stretches the start-ups, stack dumps
    and cases around the hangs, never their order): each TIMEOUT is watched where the supervisor
    takes it, with the case pytest was waiting for then and the other worker's running case."""
    regular, faulty = _cases(tmp_path)
    short, long = faulty["f437"], faulty["f529"]
    monkeypatch.setenv("SWCANN_FAULTS", _faults(f437="phase2_hang", f529="sync_hang"))
    deadline = {short.id: DEADLINE_S, long.id: DEADLINE_S + 3}
    order = [regular[0], short, long, *regular[1:9]]
    ask = [regular[0], long, *regular[1:9], short]         # the short hang is asked for last
    pool = CasePool(SETTINGS, "main", 2)
    asking, taken, answered_before_asked = [None], {}, {}

    def watch(ex):
        real = ex._timed_out

        def timed_out(head, duration):
            running = {other.label: (other._queue[0].case.id, other.time_left())
                       for other in pool.executors if other is not ex and other.queued}
            taken.setdefault(head.case.id, []).append({"asking": asking[0], "running": running, "worker": ex.label})
            return real(head, duration)
        ex._timed_out = timed_out
    for ex in pool.executors:
        watch(ex)
    try:
        pool.start()
        records = {}
        for case in ask:
            i = order.index(case)
            ahead = [(c, deadline.get(c.id, 60.0)) for c in order[i + 1:i + 9]]
            answered_before_asked[case.id] = any(case.id in ex.case_ids() and not ex.holds(case)
                                                 for ex in pool.executors)
            asking[0] = case.id
            records[case.id] = flat(pool.run(case, deadline.get(case.id, 60.0), ahead))
    finally:
        pool.close()
    s, lng = records[short.id], records[long.id]
    assert s["status"] == lng["status"] == "TIMEOUT" and s["worker"] != lng["worker"], (s, lng)
    # each hang had its whole deadline, counted from when its worker began it
    assert s["deadline_s"] == DEADLINE_S <= s["duration_s"] and lng["deadline_s"] == DEADLINE_S + 3 <= lng["duration_s"]
    # kept while the other was awaited: the short hang's TIMEOUT was taken once, while pytest waited for the
    # long one, which was still running in the other worker with its own deadline not yet come
    (when,) = taken[short.id]
    assert when["asking"] == long.id and when["worker"] == s["worker"], when
    assert when["running"].get(lng["worker"], (None,))[0] == long.id, when
    assert when["running"][lng["worker"]][1] > 0, when
    # ... so asking for it last cost nothing: its record was there already (no second deadline)
    assert answered_before_asked[short.id] and not answered_before_asked[long.id], answered_before_asked
    assert [w["asking"] for w in taken[long.id]] == [long.id], taken
    passed = [records[c.id] for c in regular[:9]]
    assert [r["status"] for r in passed] == ["PASS"] * 9
    replaced = {r["worker"] for r in passed if r.get("recovered_from", {}).get("cause") == "TIMEOUT"}
    assert replaced == {"main.0", "main.1"}, replaced


def test_a_crash_costs_only_its_case_and_the_cases_behind_it_run_again(tmp_path, monkeypatch):
    regular, faulty = _cases(tmp_path)
    crashing = faulty["f289"]
    monkeypatch.setenv("SWCANN_FAULTS", _faults(f289="phase2_segv"))
    pool = CasePool(SETTINGS, "main", 2)
    order = [regular[0], crashing, *regular[1:12]]
    try:
        pool.start()
        records = [flat(pool.run(c, 60.0, [(n, 60.0) for n in order[i + 1:i + 9]])) for i, c in enumerate(order)]
    finally:
        pool.close()
    assert [r["case_id"] for r in records] == [c.id for c in order]
    assert [r["status"] for r in records] == ["PASS", "CRASH"] + ["PASS"] * 11
    assert records[1]["signal"] == "SIGSEGV" and "injected by SWCANN_FAULTS" in records[1]["last_error"]


def test_a_lost_device_stops_only_its_own_worker(tmp_path, monkeypatch):
    """After a crash, the replacement of that worker cannot open its device: the pool goes on
    with the other worker, so no case is MISSING while one worker still has a device."""
    regular, faulty = _cases(tmp_path)
    crashing = faulty["f289"]
    monkeypatch.setenv("SWCANN_FAULTS", _faults(f289="phase2_segv"))
    pool = CasePool(SETTINGS, "main", 2)
    try:
        pool.start()
        assert flat(pool.run(regular[0], 60.0))["status"] == "PASS"
        crashed = flat(pool.run(crashing, 60.0))
        assert crashed["status"] == "CRASH"
        victim = next(ex for ex in pool.executors if ex.label == crashed["worker"])
        victim.settings = victim.settings.with_(device="7")        # what its replacement will find
        later = [flat(pool.run(c, 60.0, [(n, 60.0) for n in regular[i + 2:min(i + 6, 10)]]))
                 for i, c in enumerate(regular[1:10])]
        for ex in pool.executors:
            ex.settings = ex.settings.with_(device="7")                  # now the other one too
        other = next(ex for ex in pool.executors if ex is not victim)
        other._kill()                                    # its worker dies; no replacement can open
        gone = [flat(pool.run(c, 60.0)) for c in regular[10:12]]
    finally:
        pool.close()
    assert victim.lost and "--device 7" in victim.lost
    assert [r["status"] for r in later] == ["PASS"] * 9
    assert {r["worker"] for r in later} == {other.label}
    assert [r["status"] for r in gone] == ["MISSING", "MISSING"], gone
    assert all(r["reason"].startswith("not run: device not usable after") for r in gone)


def test_pool_workers_share_one_zygote(tmp_path):
    """torch is imported once for all of them: the workers are forks of one zygote."""
    pool = CasePool({**SETTINGS, "backend": "torch", "device": "cpu"}, "main", 3)
    try:
        pool.start()
        zygotes = {id(ex._zygote) for ex in pool.executors}
        pids = {ex._proc.pid for ex in pool.executors}
    finally:
        pool.close()
    assert len(zygotes) == 1 and len(pids) == 3


class _Config:
    def __init__(self, args=("cases/",), worker=False, **options):
        self.args = list(args)
        self.options = {"case_workers": "auto", "device": None, "backend": "aclnn", "dist": "no", **options}
        if worker:
            self.workerinput = {"workerid": "gw0"}

    def getoption(self, name, default=None):
        return self.options.get(name, default)


@pytest.mark.parametrize("config, expected", [
    (_Config(), 2), (_Config(case_workers="3"), 3), (_Config(dist="load"), 1), (_Config(worker=True), 1),
    (_Config(backend="torch", device="cuda:0"), 1), (_Config(backend="torch", device="cpu"), 2),
    (_Config(args=["cases/avg_pool2d_backward.yaml::x"]), 1),
])
def test_auto_case_workers(monkeypatch, config, expected):
    """auto: one per core (two here) for CPU work; one under xdist, on an accelerator, for a repro line."""
    from harness.plugin import options
    from harness.execution import sizing
    monkeypatch.setattr(sizing.os, "cpu_count", lambda: 2)
    monkeypatch.setattr(sizing, "available_memory", lambda: 64 << 30)
    assert options._case_workers(config).count == expected


@pytest.mark.parametrize("cpus, memory, expected", [
    (64, 256 << 30, 8),          # at most sizing.MAX_AUTO_CASE_WORKERS
    (16, 10 << 30, 3),           # what the memory holds at 3 GiB a worker
    (4, 1 << 30, 1),             # never none
    (4, None, 4),                # memory unknown: the cores decide
])
def test_auto_case_workers_is_capped_by_cores_and_memory(monkeypatch, cpus, memory, expected):
    from harness.execution import sizing
    monkeypatch.setattr(sizing.os, "cpu_count", lambda: cpus)
    monkeypatch.setattr(sizing, "available_memory", lambda: memory)
    assert sizing.case_workers("auto", backend="aclnn", device=None, distributed=False, single_case=False) == expected


@pytest.mark.parametrize("cpus, memory, jobs, expected", [
    (64, 256 << 30, 2, 8),       # a share of 32 cores, but at most MAX_AUTO_CASE_WORKERS
    (16, 12 << 30, 2, 2),        # 6 GiB each: two workers of 3 GiB
    (8, 64 << 30, 16, 1),        # never none
])
def test_jobs_side_by_side_share_cores_and_memory(monkeypatch, cpus, memory, jobs, expected):
    from harness.execution import sizing
    monkeypatch.setattr(sizing.os, "cpu_count", lambda: cpus)
    monkeypatch.setattr(sizing, "available_memory", lambda: memory)
    assert sizing.cpu_workers(jobs) == expected


def test_prepare_only_spreads_over_xdist_workers(monkeypatch):
    """--prepare-only computes in the pytest processes (no case workers): -n auto gives it the cores."""
    from harness.execution import sizing
    monkeypatch.setattr(sizing.os, "cpu_count", lambda: 6)
    monkeypatch.setattr(sizing, "available_memory", lambda: 64 << 30)
    assert sizing.auto_xdist_workers("aclnn", prepare_only=True) == 6
    assert sizing.auto_xdist_workers("aclnn") == 0
    monkeypatch.setattr(sizing.os, "cpu_count", lambda: 1)
    assert sizing.auto_xdist_workers("torch", prepare_only=True) == 0


def test_available_memory_is_read():
    from harness.execution import sizing
    memory = sizing.available_memory()
    assert memory is None or 64 << 20 < memory < 1 << 50
