"""History: every run in one results store (harness/history/).

A seeded history of 30 nights on the software CANN (four cases a night, each night a real suite run
with --perf on modelled device time, ingested by its own --db when it ends): the device's modelled
bandwidth falls by exactly 3 % a night from night 10 on (SWCANN_DEVICE_GBPS), a library fault is on
from night 17 (an AvgPool2d case's partial last block never stored: FAIL), a MaxPool2d case fails one
night in five (the same fault on nights 5, 10, ..., 30 only), and an AvgPool2d case's bits change
from night 22 on (batch_order_varies: a summation order within every tolerance). Each night is gated
against the night before's perf baseline, as a nightly job that refreshes its baseline would be.
`history` must name the first bad night of the fault, of the digest change and of the drift, the
flaky case with its rate, and the drift that no night's gate flagged. Night 1 is run with a store
that cannot be reached: one line, its files intact, and the ingest command it names completes it.

Then: the same run twice adds nothing; a killed ingest leaves the store as it was and a rerun
completes it; two ingests at once into SQLite and a sweep whose four shard jobs ingest at once into
a private PostgreSQL cluster (tests/pg_cluster.py) hold every case once; an older schema is
upgraded by its migration and a newer one refused in one line; bad URLs and options are one
`ERROR:` line, exit 4.
"""
from __future__ import annotations

import fcntl
import json
import os
import shlex
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests import pg_cluster, swenv
from tests.test_binding import needs_swcann

REPO = Path(__file__).resolve().parents[1]
NIGHTS = 30
DRIFT_FROM, FAULT_FROM, DIGEST_FROM, FLAKE_EVERY = 10, 17, 22, 5
BASE_GBPS = 0.01
FILES = {
    "drift": "cases/max_pool2d_with_indices_backward.yaml::fp32_windows[float32-int32-2x3x9x9-ks2x2_s2x2_p0x0_d1x1_cm0-NCHW-contiguous-uniform]",
    "flaky": "cases/max_pool2d_with_indices_backward.yaml::fp32_windows[float32-int32-2x3x9x9-ks3x3_s2x2_p1x1_d1x1_cm1-NCHW-contiguous-uniform]",
    "fault": "cases/avg_pool2d_backward.yaml::windows[float32-2x3x9x9-ks2x2_s2x2_p0x0_cm0_cip0_do0_cmt0-NCHW-contiguous-uniform]",
    "digest": "cases/avg_pool2d_backward.yaml::windows[float32-2x3x9x9-ks3x3_s2x2_p1x1_cm1_cip1_do0_cmt0-NCHW-contiguous-uniform]",
}
CASE = {k: v.partition("::")[2] for k, v in FILES.items()}
CASE = {"drift": "MaxPool2dWithIndicesBackward." + CASE["drift"], "flaky": "MaxPool2dWithIndicesBackward." + CASE["flaky"],
        "fault": "AvgPool2dBackward." + CASE["fault"], "digest": "AvgPool2dBackward." + CASE["digest"]}
# gradOutput element counts (the faults' numel= triggers): 2x3x4x4 and 2x3x5x5
FAULT = "tail_unwritten@op=AvgPool2dBackward&numel=96"
FLAKE = "tail_unwritten@op=MaxPool2dWithIndicesBackward&numel=150"
DIGEST = "batch_order_varies@op=AvgPool2dBackward&numel=150"
UNREACHABLE = "postgresql://nobody@127.0.0.1:1/history"      # port 1: refused at once, nothing listens


def night_env(n: int) -> dict:
    faults = ([FAULT] if n >= FAULT_FROM else []) + ([FLAKE] if n % FLAKE_EVERY == 0 else []) + \
        ([DIGEST] if n >= DIGEST_FROM else [])
    env = {"SWCANN_DEVICE_TIME": "1", "SWCANN_DEVICE_GBPS": repr(BASE_GBPS / 1.03 ** max(0, n - DRIFT_FROM + 1))}
    if faults:
        env["SWCANN_FAULTS"] = ",".join(faults)
    return env


def _base_env() -> dict:
    from swcann.build import build
    return swenv.env_for(build())


def reporting(*args: str, env: dict | None = None, timeout: float = 300) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "harness.reporting", *args], cwd=REPO, env=env or _base_env(),
                          capture_output=True, text=True, timeout=timeout)


def suite(report_dir: Path, *args: str, env: dict) -> subprocess.CompletedProcess:
    cmd = [sys.executable, "-m", "pytest", "-p", "harness.plugin", "-p", "no:hypothesispytest", "-c", "pyproject.toml",
           "--rootdir=.", *FILES.values(), "--backend", "aclnn", "--soc", "ascend910b", "-n", "0", "-q",
           "-p", "no:cacheprovider", "--perf", "--deterministic", "--report-dir", str(report_dir), *args]
    return subprocess.run(cmd, cwd=REPO, env=env, capture_output=True, text=True, timeout=600)


def answer(*args: str, db: str) -> tuple[list[str], object]:
    """`history ...` as a user runs it: its lines, and its --json document."""
    out = Path(os.environ.get("TMPDIR", "/tmp")) / f"history-{os.getpid()}-{time.monotonic_ns()}.json"
    proc = reporting("history", *args, "--db", db, "--json", str(out))
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    doc = json.loads(out.read_text())
    out.unlink()
    return proc.stdout.splitlines(), doc


def night_of(brief: dict | None) -> int | None:
    return int(Path(brief["directory"]).name.split("-")[1]) if brief else None


def counts(path: Path) -> tuple[int, int]:
    with sqlite3.connect(path) as c:
        return c.execute("SELECT COUNT(*) FROM runs").fetchone()[0], c.execute("SELECT COUNT(*) FROM results").fetchone()[0]


# ---------------------------------------------------------------- the seeded history

@pytest.fixture(scope="module")
def seeded(request, tmp_path_factory):
    """30 nights, each a real run ingested by its own --db; night 1's store was unreachable, and the
    ingest command its line named is run right after it. About 3 s a night on 2 cores, made once per
    session: under xdist the first worker to need them makes them (under a lock, in the session's
    temporary directory) and the others read what it wrote."""
    worker = hasattr(request.config, "workerinput")
    shared = (tmp_path_factory.getbasetemp().parent if worker else tmp_path_factory.getbasetemp()) / "history-nights"
    shared.mkdir(exist_ok=True)
    with open(shared / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        done = shared / "done.json"
        if not done.exists():
            done.write_text(json.dumps(_make_nights(shared)))
        facts = json.loads(done.read_text())
    return {"root": shared, "store": shared / "history.db", "url": f"sqlite:///{shared / 'history.db'}", **facts}


def _make_nights(root: Path) -> dict:
    from harness.reporting.__main__ import main as reporting_main
    url = f"sqlite:///{root / 'history.db'}"
    base = _base_env()
    said = {}
    for n in range(1, NIGHTS + 1):
        night = root / f"night-{n:02d}"
        args = ["--db", UNREACHABLE if n == 1 else url]
        if n > 1:            # gated against the night before: the rolling baseline a nightly job keeps
            baseline = root / f"perf-{n - 1:02d}.json"
            assert reporting_main(["baseline", "--perf", str(root / f"night-{n - 1:02d}"), "-o", str(baseline)]) == 0
            args += ["--gate", str(baseline)]
        if n < NIGHTS:
            args.append("--no-html")
        proc = suite(night, *args, env={**base, **night_env(n)})
        assert proc.returncode in (0, 1), proc.stdout[-3000:] + proc.stderr[-3000:]
        if n <= 2:
            said[n] = {"code": proc.returncode, "out": proc.stdout + proc.stderr}
        if n == 1:           # the retry the line names, as a user would paste it (into the real store)
            line = next((ln for ln in said[1]["out"].splitlines() if "not ingested" in ln), "")
            command = line.partition("`")[2].partition("`")[0]
            assert command.startswith("python -m harness.reporting ingest "), line
            argv = shlex.split(command)[3:]
            argv[argv.index("--db") + 1] = url
            retry = reporting(*argv, env=base)
            said["retry"] = {"code": retry.returncode, "out": retry.stdout + retry.stderr, "argv": argv}
    return {"said": said}


@needs_swcann
def test_an_unreachable_store_costs_one_line_and_no_file(seeded):
    """Night 1's store refused the connection: its run still passed with every file written, one
    line said so and how to ingest it later, and that command completed it."""
    said, night = seeded["said"], seeded["root"] / "night-01"
    assert said["1"]["code"] == 0, said["1"]["out"][-2000:]
    lines = [ln for ln in said["1"]["out"].splitlines() if "history" in ln and "not ingested" in ln]
    assert len(lines) == 1, lines
    assert "source of truth" in lines[0] and f"ingest {night} --db" in lines[0] and "Connection refused" in lines[0]
    assert all((night / f).is_file() for f in ("results.jsonl", "summary.json", "summary.md", "junit.xml"))
    assert len((night / "results.jsonl").read_text().splitlines()) == len(FILES)
    # the command the line named, pasted with the real store's URL, completed it
    assert said["retry"]["argv"][:2] == ["ingest", str(night)], said["retry"]
    assert said["retry"]["code"] == 0 and "4 result(s) added" in said["retry"]["out"], said["retry"]
    # night 2's own --db ingested night 2 into the same store when it ended
    assert said["2"]["code"] == 0 and "history: " in said["2"]["out"] and "4 result(s) added" in said["2"]["out"]


@needs_swcann
def test_history_names_the_first_bad_night_of_the_fault_and_of_the_digest_change(seeded):
    lines, found = answer("first-bad", db=seeded["url"])
    by = {(f["case_id"], f["kind"]): f for f in found}
    fault = by[(CASE["fault"], "status")]
    assert (night_of(fault["first_bad"]), night_of(fault["last_good"])) == (FAULT_FROM, FAULT_FROM - 1)
    assert fault["now"] == "FAIL" and fault["bad_runs"] == NIGHTS - FAULT_FROM + 1
    assert any(c.startswith("SWCANN_FAULTS") and FAULT in c for c in fault["changed"]), fault["changed"]
    assert fault["first_bad"]["library_sha256"] and fault["first_bad"]["cann_version"] == "9.0.0-swcann"
    digest = by[(CASE["digest"], "digest")]
    assert (night_of(digest["first_bad"]), night_of(digest["last_good"])) == (DIGEST_FROM, DIGEST_FROM - 1)
    assert digest["bad_runs"] == NIGHTS - DIGEST_FROM + 1
    # the flaky case failed on the last night too: that is its first bad run now, the night before good
    flaky = by[(CASE["flaky"], "status")]
    assert (night_of(flaky["first_bad"]), night_of(flaky["last_good"])) == (NIGHTS, NIGHTS - 1)
    assert not any(k == CASE["drift"] for k, _ in by)          # its bits and status never changed
    assert any(f"{CASE['fault']} on ascend910b: FAIL since" in ln and "night-17" in ln for ln in lines), lines
    # the timeline of one case: every night, in order
    _, timeline = answer("timeline", CASE["fault"], db=seeded["url"])
    points = timeline["ascend910b"]
    assert [night_of(p) for p in points] == list(range(1, NIGHTS + 1))
    assert [p["status"] for p in points] == ["PASS"] * (FAULT_FROM - 1) + ["FAIL"] * (NIGHTS - FAULT_FROM + 1)


@needs_swcann
def test_history_names_the_flaky_case_with_its_rate_and_proposes_its_baseline_entry(seeded, tmp_path):
    baseline = tmp_path / "baseline.yaml"
    baseline.write_text("target: {backend: aclnn, family: ascend910b}\nflakes:\n"
                        f"  - {{case: '{CASE['drift']}', reason: once flaky, link: https://issues.example/1}}\n")
    lines, found = answer("flakes", "--baseline", str(baseline), db=seeded["url"])
    assert [f["case_id"] for f in found["flaky"]] == [CASE["flaky"]], found["flaky"]
    flaky = found["flaky"][0]
    assert (flaky["failures"], flaky["judged"], flaky["rate"]) == (NIGHTS // FLAKE_EVERY, NIGHTS, 0.2)
    assert flaky["transitions"] == NIGHTS // FLAKE_EVERY - 1
    assert night_of(flaky["first_failure"]) == FLAKE_EVERY and night_of(flaky["last_failure"]) == NIGHTS
    assert [p["case"] for p in found["proposed"]] == [CASE["flaky"]]
    assert "failed 6 of 30 run(s) on ascend910b (20 %)" in found["proposed"][0]["reason"]
    # the entry for a case that never failed in the window is stale
    assert [s["case"] for s in found["stale"]] == [CASE["drift"]]
    assert "none flaked" in found["stale"][0]["why"]
    assert any(ln.strip().startswith("20.0 %") and CASE["flaky"] in ln for ln in lines), lines
    assert "flakes:" in lines and any(ln.startswith("  - {case: '" + CASE["flaky"]) for ln in lines)


@needs_swcann
def test_history_finds_the_slow_drift_that_no_nights_gate_flagged(seeded):
    lines, found = answer("perf", db=seeded["url"])
    drifts = {t["op"]: t for t in found}
    assert set(drifts) == {"AvgPool2dBackward", "MaxPool2dWithIndicesBackward"}, lines
    for t in drifts.values():
        assert t["drift"] and t["missed_by_nightly_gate"] and t["p"] < 1e-6
        assert night_of(t["onset"]) == DRIFT_FROM and night_of(t["before_onset"]) == DRIFT_FROM - 1
        assert t["slope_pct_per_run"] == pytest.approx(3.0, abs=0.05)
        assert t["max_step_pct"] == pytest.approx(3.0, abs=0.05) and t["max_step_pct"] < 10
        assert t["change_pct"] == pytest.approx(100 * (1.03 ** (NIGHTS - DRIFT_FROM + 1) - 1), rel=0.01)
    assert any(ln.startswith("SLOW DRIFT MaxPool2dWithIndicesBackward on ascend910b") and "night-10" in ln
               and "no night's gate" in ln for ln in lines), lines
    # every night's gate, against the night before, saw nothing: SAME for every case it compared
    with sqlite3.connect(seeded["store"]) as c:
        verdicts = dict(c.execute("SELECT perf_verdict, COUNT(*) FROM results WHERE perf_verdict IS NOT NULL "
                                  "GROUP BY perf_verdict").fetchall())
    assert set(verdicts) == {"SAME"} and verdicts["SAME"] >= 3 * (NIGHTS - 2), verdicts
    # a window that ends before the drift began holds none
    with_window = reporting("history", "perf", "--db", seeded["url"], "--window", "8")
    assert "SLOW DRIFT" in with_window.stdout        # the last 8 nights: still rising


@needs_swcann
def test_pass_rate_per_family_over_the_nights(seeded):
    _, rates = answer("pass-rate", db=seeded["url"])
    passed = [p["passed"] for p in rates["ascend910b"]]
    expect = [4 - (n >= FAULT_FROM) - (n % FLAKE_EVERY == 0) for n in range(1, NIGHTS + 1)]
    assert passed == expect and all(p["total"] == 4 for p in rates["ascend910b"])
    _, runs = answer("runs", db=seeded["url"])
    assert [night_of(r) for r in runs] == list(range(1, NIGHTS + 1))


@needs_swcann
def test_the_last_nights_report_has_a_history_section(seeded):
    html = (seeded["root"] / f"night-{NIGHTS}" / "report.html").read_text()
    section = html[html.index('<section id="history">'):]
    section = section[:section.index("</section>")]
    assert 'data-kind="slow-drift"' in section and "SLOW DRIFT" in section
    assert 'data-plot="pass-rate"' in section and section.count('data-plot="perf-trend"') == 1
    assert section.count("<svg") == 2 and 'data-kind="first-bad-status"' in section
    assert 'data-kind="first-bad-digest"' in section and CASE["flaky"] in section
    assert "http:" not in section and "https:" not in section


@needs_swcann
def test_the_same_run_twice_adds_nothing(seeded):
    before = counts(seeded["store"])
    assert before == (NIGHTS, NIGHTS * len(FILES))
    dirs = [str(seeded["root"] / f"night-{n:02d}") for n in range(1, NIGHTS + 1)]
    proc = reporting("ingest", *dirs, "--db", seeded["url"])
    assert proc.returncode == 0 and proc.stdout.count("already in the store: nothing added") == NIGHTS, proc.stdout
    assert counts(seeded["store"]) == before


# ---------------------------------------------------------------- killed, concurrent, PostgreSQL

def _paused(args: list[str], pause: Path, env: dict) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "harness.reporting", *args], cwd=REPO,
                            env={**env, "ACLNN_HISTORY_PAUSE": str(pause)}, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)


def _wait_for(what: str, ready, procs=(), limit: float = 300):
    """Poll ready() (a condition, never a duration: the machine is loaded); a process that ended
    meanwhile fails the test with its output."""
    end = time.monotonic() + limit
    while not ready():
        for p in procs:
            if p.poll() is not None:
                out, err = p.communicate()
                raise AssertionError(f"{what}: a process ended first ({p.returncode}): {out[-2000:]} {err[-2000:]}")
        assert time.monotonic() < end, f"no {what} within {limit} s"
        time.sleep(0.05)


@needs_swcann
def test_a_killed_ingest_leaves_the_store_as_it_was_and_a_rerun_completes_it(seeded, tmp_path):
    store = tmp_path / "killed.db"
    url = f"sqlite:///{store}"
    env = _base_env()
    assert reporting("ingest", *(str(seeded["root"] / f"night-{n:02d}") for n in (1, 2)), "--db", url).returncode == 0
    before = counts(store)
    pause = tmp_path / "pause"
    pause.mkdir()
    proc = _paused(["ingest", str(seeded["root"] / "night-03"), "--db", url], pause, env)
    _wait_for("ingest inside its transaction", lambda: list(pause.glob("inside-*")), [proc])
    proc.send_signal(signal.SIGKILL)          # its rows are written, not committed
    proc.wait(timeout=60)
    assert counts(store) == before == (2, 8)
    rerun = reporting("ingest", str(seeded["root"] / "night-03"), "--db", url)
    assert rerun.returncode == 0 and "4 result(s) added" in rerun.stdout, rerun.stdout + rerun.stderr
    assert counts(store) == (3, 12)


def _every_case_once(rows: list[tuple], expected: dict[str, set]) -> None:
    """rows: (run directory, case id) of every result; expected: directory -> its case ids."""
    seen: dict = {}
    for directory, case in rows:
        seen.setdefault(directory, []).append(case)
    assert {d: sorted(c) for d, c in seen.items()} == {d: sorted(c) for d, c in expected.items()}


def _records(directory: Path) -> set[str]:
    return {json.loads(ln)["case_id"] for ln in (directory / "results.jsonl").read_text().splitlines() if ln.strip()}


@needs_swcann
def test_two_ingests_at_once_into_sqlite_hold_every_case_once(seeded, tmp_path):
    """The first ingest is held inside its transaction (the write lock taken); the second waits on
    SQLite's busy timeout instead of failing; released, both land, and each run's cases once."""
    store, env = tmp_path / "two.db", _base_env()
    url = f"sqlite:///{store}"
    pause = tmp_path / "pause"
    pause.mkdir()
    nights = [seeded["root"] / f"night-{n:02d}" for n in (4, 5)]
    first = _paused(["ingest", str(nights[0]), "--db", url], pause, env)
    _wait_for("the first ingest inside its transaction", lambda: list(pause.glob("inside-*")), [first])
    second = _paused(["ingest", str(nights[1]), "--db", url], pause, env)
    (pause / "go").write_text("")
    outs = [p.communicate(timeout=300) for p in (first, second)]
    assert [p.returncode for p in (first, second)] == [0, 0], outs
    assert all("4 result(s) added" in out for out, _ in outs), outs
    with sqlite3.connect(store) as c:
        rows = c.execute("SELECT runs.directory, cases.case_id FROM results JOIN runs ON runs.id = results.run "
                         "JOIN cases ON cases.id = results.\"case\"").fetchall()
    _every_case_once(rows, {str(d.resolve()): _records(d) for d in nights})


needs_postgres = pytest.mark.skipif(pg_cluster.missing() is not None, reason=str(pg_cluster.missing()))


@pytest.fixture(scope="module")
def postgres():
    cluster = pg_cluster.Cluster()
    yield cluster
    cluster.stop()


@needs_swcann
@needs_postgres
def test_a_sweeps_four_shard_jobs_ingest_into_postgresql_at_once(postgres, tmp_path):
    """A real sweep (one family, 4 shards, all at once) with --db on a private cluster: every job
    holds its run's transaction open until all four are inside theirs (the pause hook), so the
    four ingest at once into a store none of them found created; then every case once, the same
    cases as the shards' own results, and the merge's own ingest of the four adds nothing."""
    from sqlalchemy import create_engine, text
    pause = tmp_path / "pause"
    pause.mkdir()
    out = tmp_path / "sweep"
    env = {**_base_env(), "ACLNN_HISTORY_PAUSE": str(pause)}
    sweep = subprocess.Popen([sys.executable, "-m", "harness.reporting", "sweep", "-o", str(out), "--families",
                              "ascend910b", "--shards", "4", "--parallel", "4", "--db", postgres.url, "--", "-k",
                              "max_pool2d and fp32_windows and 2x3x9x9 and contiguous", "--no-html"],
                             cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    _wait_for("four shard jobs inside their ingest transactions", lambda: len(list(pause.glob("inside-*"))) >= 4,
              [sweep], limit=500)
    (pause / "go").write_text("")
    stdout, stderr = sweep.communicate(timeout=500)
    assert sweep.returncode == 0, stdout[-3000:] + stderr[-3000:]
    shards = [out / f"ascend910b-{i}" for i in range(1, 5)]
    expected = {str(d.resolve()): _records(d) for d in shards}
    assert sum(len(c) for c in expected.values()) >= 8 and all(expected.values())
    engine = create_engine(postgres.url.replace("postgresql://", "postgresql+psycopg://"))
    try:
        with engine.connect() as c:
            rows = c.execute(text('SELECT runs.directory, cases.case_id FROM results JOIN runs ON runs.id = results.run '
                                  'JOIN cases ON cases.id = results."case"')).all()
    finally:
        engine.dispose()
    _every_case_once([tuple(r) for r in rows], expected)
    assert stdout.count("already in the store: nothing added") == 4, stdout[-3000:]
    assert len(list(pause.glob("inside-*"))) == 4        # the merge inserted nothing, so it never paused
    again = reporting("ingest", str(out / "merged"), "--db", postgres.url)      # a merged report: its runs
    assert again.returncode == 0 and again.stdout.count("already in the store") == 4, again.stdout + again.stderr


# ---------------------------------------------------------------- schema versions, URLs, options

def _tables(engine) -> dict:
    from sqlalchemy import inspect
    i = inspect(engine)
    return {t: sorted(c["name"] for c in i.get_columns(t)) for t in i.get_table_names() if t != "alembic_version"}


def test_the_migrations_make_the_tables_the_code_reads(tmp_path):
    from sqlalchemy import create_engine
    from harness.history import open_store, schema
    store = open_store(str(tmp_path / "h.db"))
    try:
        assert _tables(store.engine) == {t.name: sorted(c.name for c in t.columns) for t in schema.metadata.sorted_tables}
    finally:
        store.close()
    engine = create_engine(f"sqlite:///{tmp_path / 'h.db'}")
    with engine.connect() as c:
        assert c.exec_driver_sql("SELECT version_num FROM alembic_version").scalar() == schema.HEAD
    engine.dispose()


def test_an_older_store_is_upgraded_by_its_migration_and_a_newer_one_refused(tmp_path):
    from harness.history import StoreTooNew, open_store
    from harness.history.migrate import ensure_current
    path = tmp_path / "old.db"
    old = open_store(str(path), migrate=False)
    assert ensure_current(old, "0001").startswith("created")
    with old.engine.begin() as c:          # a run ingested under 0001: no counts on its row yet
        c.exec_driver_sql("INSERT INTO runs (run_key, content_sha256, run_id, directory, started, ingested) "
                          "VALUES ('k', 'c', 'r', '/d', '2026-01-01T00:00:00+00:00', 'now')")
        c.exec_driver_sql("INSERT INTO cases (case_id) VALUES ('a'), ('b'), ('c')")
        c.exec_driver_sql("INSERT INTO results (run, \"case\", status, raw_status) VALUES (1, 1, 'PASS', 'PASS'), "
                          "(1, 2, 'FAIL', 'FAIL'), (1, 3, 'SKIP', 'SKIP')")
    old.close()
    store = open_store(str(path))
    assert store.upgraded and "from schema 0001 to 0002" in store.upgraded
    with store.reading() as c:
        row = c.exec_driver_sql("SELECT total, passed, failed, totals FROM runs").one()
    store.close()
    assert tuple(row[:3]) == (3, 1, 1) and json.loads(row[3]) == {"FAIL": 1, "PASS": 1, "SKIP": 1}
    assert open_store(str(path)).upgraded is None          # current now: nothing to do
    with sqlite3.connect(path) as c:
        c.execute("UPDATE alembic_version SET version_num = '0099'")
    with pytest.raises(StoreTooNew, match="0099 is newer than this harness knows"):
        open_store(str(path))
    proc = reporting("history", "runs", "--db", str(path), env=dict(os.environ))
    assert proc.returncode == 4 and proc.stderr.count("\n") == 1 and proc.stderr.startswith("ERROR: ")
    assert "0099" in proc.stderr and proc.stdout == ""


@pytest.mark.parametrize("args, words", [
    (["history", "runs", "--db", "mysql://u@h/db"], "unknown database kind 'mysql'"),
    (["history", "runs", "--db", "sqlite://"], "SQLite needs a file"),
    (["history", "runs", "--db", ""], "an empty value"),
    (["history", "runs", "--db", "postgresql+psycopg2://u@h/db"], "driver 'psycopg2' is not installed"),
    (["history", "runs", "--db", "postgresql://u@h"], "no database name"),
    (["history", "perf", "--db", "x.db", "--window", "3"], "--window: must be an integer >= 8"),
    (["history", "perf", "--db", "x.db", "--alpha", "nan"], "--alpha"),
    (["history", "flakes", "--db", "x.db", "--min-rate", "2"], "--min-rate"),
    (["history", "bogus", "--db", "x.db"], "invalid choice: 'bogus'"),
    (["history", "timeline", "--db", "x.db"], "the following arguments are required: case"),
    (["history", "runs", "--db", "sub/x.db"], "no results store there"),         # a question makes no store
    (["ingest", "/nonexistent-dir", "--db", "x.db"], "/nonexistent-dir: not a directory"),
    (["merge", "-o", "x", "y", "--db", "oracle://u@h/db"], "unknown database kind 'oracle'"),
])
def test_a_bad_url_or_option_is_one_error_line_and_nothing_written(tmp_path, args, words):
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")]))}
    proc = subprocess.run([sys.executable, "-m", "harness.reporting", *args], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 4, proc.stdout + proc.stderr
    assert proc.stderr.startswith("ERROR: ") and proc.stderr.count("\n") == 1 and words in proc.stderr, proc.stderr
    assert list(tmp_path.iterdir()) == []          # no store created, no merge written


def test_an_unreachable_store_is_one_error_line_for_the_commands(tmp_path):
    run = tmp_path / "run"
    run.mkdir()
    (run / "results.jsonl").write_text(json.dumps({"case_id": "a.b[c]", "status": "PASS"}) + "\n")
    for args in (["ingest", str(run)], ["history", "runs"]):
        proc = subprocess.run([sys.executable, "-m", "harness.reporting", *args, "--db", UNREACHABLE], cwd=REPO,
                              env=dict(os.environ), capture_output=True, text=True, timeout=120)
        assert proc.returncode == 4 and proc.stderr.count("\n") == 1 and "Connection refused" in proc.stderr, proc.stderr
    assert sorted(p.name for p in run.iterdir()) == ["results.jsonl"]


def test_a_bad_db_on_a_suite_run_is_refused_before_any_case_runs(tmp_path):
    env = _base_env()
    proc = suite(tmp_path / "r", "--db", "mysql://u@h/db", "--no-html", env=env)
    assert proc.returncode == 4, proc.stdout[-2000:] + proc.stderr[-2000:]
    assert "unknown database kind 'mysql'" in proc.stdout + proc.stderr
    assert not (tmp_path / "r" / "results.jsonl").exists()


# ---------------------------------------------------------------- a perf REGRESSION's first bad run

def test_a_regressions_first_bad_run_is_named_with_the_library_that_brought_it(tmp_path):
    """Records as the perf gate leaves them (perf_gate verdicts), ingested through the API: the case
    regressed from the third run on, when the library changed."""
    from harness.history import open_store, timeline
    from harness.history.ingest import RunSource, ingest
    store = open_store(str(tmp_path / "h.db"))
    sources = []
    for n in range(1, 6):
        verdict = "REGRESSION" if n >= 3 else "SAME"
        rec = {"case_id": "Op.g[x]", "op": "Op", "family": "ascend950", "status": "PASS", "raw_status": "PASS",
               "digests": {"out": "sha256:" + "ab" * 32}, "perf": {"timing": "events", "median_ms": 1.0 + n,
                                                                 "ci_ms": [1.0, 2.0], "n": 20},
               "perf_gate": [{"verdict": verdict, "ratio": 1.3 if n >= 3 else 1.0}]}
        lib = "1" * 64 if n < 3 else "2" * 64
        ident = {"family": "ascend950", "backend": "aclnn", "host": "h", "cann_version": "8.0" if n < 3 else "8.1",
                 "started": f"2026-03-0{n}T01:00:00+00:00", "ended": f"2026-03-0{n}T02:00:00+00:00"}
        sources.append(RunSource(f"/runs/night-{n:02d}", ident, [rec], lib, run_id=f"r{n}"))
    assert [i.outcome for i in ingest(store, sources)] == ["added"] * 5
    with store.reading() as conn:
        found = timeline.first_bad_runs(conn)
    store.close()
    assert [(f.kind, night_of(f.first_bad.brief()), night_of(f.last_good.brief())) for f in found] == \
        [("regression", 3, 2)]
    assert found[0].changed[:2] == [f"library {'1' * 12} -> {'2' * 12}", "CANN 8.0 -> 8.1"]
    assert found[0].bad_runs == 3 and "1.300" in found[0].detail


# ---------------------------------------------------------------- the trend test itself

def test_the_rank_test_is_exact_without_ties_and_finds_where_a_rise_began():
    import itertools
    import math
    from harness.history import rank
    for n in (4, 6):
        perms = list(itertools.permutations(range(n)))
        for s in range(-(n * (n - 1) // 2), n * (n - 1) // 2 + 1, 3):
            brute = sum(rank.mk_s(list(p)) >= s for p in perms) / len(perms)
            assert rank.mann_kendall(list(range(n))).exact
            assert rank._p_up_exact(n, s) == pytest.approx(brute, abs=1e-12)
    flat_then_rising = [0.0] * 9 + [math.log(1.03) * k for k in range(1, 21)]
    assert rank.hinge_onset(flat_then_rising) == 9
    assert rank.mann_kendall(flat_then_rising).p_up < 1e-9
    noise = [0.3, 0.1, 0.4, 0.1, 0.5, 0.9, 0.2, 0.6, 0.5, 0.3, 0.5, 0.8, 0.9, 0.7, 0.9, 0.3, 0.2, 0.3, 0.8, 0.4]
    assert rank.mann_kendall(noise).p_up > 0.05
