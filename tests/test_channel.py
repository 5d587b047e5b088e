"""The pipe protocol between a supervisor and its case worker (harness/execution/channel.py)."""
from __future__ import annotations

import array
import fcntl
import os
import termios
from dataclasses import dataclass

from harness.execution.channel import Channel


@dataclass(frozen=True)
class Spec:                     # shared by reference like an OpSpec (a class of its own, not a builtin)
    op: str
    params: tuple


def _waiting(fd: int) -> int:
    """Bytes waiting in a pipe."""
    n = array.array("i", [0])
    fcntl.ioctl(fd, termios.FIONREAD, n)
    return n[0]


def _pair():
    a_read, b_write = os.pipe()
    b_read, a_write = os.pipe()
    return Channel(a_read, a_write), Channel(b_read, b_write)


def test_a_shared_object_crosses_once_and_is_referenced_after():
    sup, worker = _pair()
    try:
        spec = Spec("MaxPool2dWithIndicesBackward", tuple(range(500)))
        sizes = []
        for i in range(3):
            sup.share(spec)
            sup.send(("run", {"case": i, "op": spec}))
            sizes.append(_waiting(worker.read_fd))
        assert sizes[0] > 1000 and sizes[1] - sizes[0] < 200 and sizes[2] - sizes[1] < 200, sizes  # a reference
        other = Spec("another", (1,))                            # same type, not shared: sent whole
        sup.send(("run", {"case": 3, "op": other}))
        got = [worker.recv() for _ in range(3)]
        assert worker.recv() == ("run", {"case": 3, "op": other})
        assert [g[1]["case"] for g in got] == [0, 1, 2]           # the shared message is not handed out
        assert got[0][1]["op"] == spec
        assert got[0][1]["op"] is got[1][1]["op"] is got[2][1]["op"]   # one object on the worker's side
        # only the first share sent the object: the pipe holds nothing more
        assert not worker.ready(0)
        worker.send(("done", spec))                                  # the other way: nothing shared, sent whole
        assert sup.recv() == ("done", spec)
    finally:
        sup.close()
        worker.close()


def test_a_new_channel_shares_again():
    """A replacement worker has a fresh channel: what the old one was sent is sent again."""
    spec = Spec("opspec", tuple(range(100)))
    for _ in range(2):
        sup, worker = _pair()
        try:
            sup.share(spec)
            sup.send(("run", spec))
            assert worker.recv() == ("run", spec)
        finally:
            sup.close()
            worker.close()


def test_both_sides_writing_at_once_do_not_deadlock():
    """The supervisor sends cases ahead while the worker sends results: far more than a pipe
    holds in both directions at once, as with a long look-ahead and big records. Neither side
    reads until it has written everything; each drains the other while its own pipe is full.
    Both sides run in threads, so a deadlock fails the test instead of hanging the run."""
    import threading
    sup, worker = _pair()
    spec = Spec("op", tuple(range(50)))
    n, big = 200, "x" * 20_000
    got: dict = {}

    def worker_side():
        for i in range(n):
            worker.send(("done", i, big))
        got["worker"] = [worker.recv() for _ in range(n)]

    def supervisor_side():
        for i in range(n):
            sup.share(spec)
            sup.send(("run", i, spec, big))
        got["supervisor"] = [sup.recv() for _ in range(n)]

    threads = [threading.Thread(target=f, daemon=True) for f in (worker_side, supervisor_side)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    try:
        assert not any(t.is_alive() for t in threads), "deadlocked: both sides stuck writing"
        assert [m[1] for m in got["worker"]] == list(range(n))
        assert got["worker"][0][2] == spec and got["worker"][-1][2] is got["worker"][0][2]
        assert [m[1] for m in got["supervisor"]] == list(range(n)) and got["supervisor"][-1][2] == big
    finally:
        sup.close()
        worker.close()


def test_cases_sent_ahead_never_exceed_the_byte_budget(tmp_path):
    """However big the cases, what is sent ahead and unanswered stays within AHEAD_BYTES, so a
    send ahead cannot block on a full pipe while a hung worker keeps the supervisor from its
    deadline. The case pytest asks for is always sent."""
    from pathlib import Path
    from harness.execution import supervisor
    from harness.operators import load_case_file

    class FakeChannel:                  # sizes as a real channel would report them
        def __init__(self, size):
            self.size, self.sent = size, []

        def share(self, obj, limit=None):
            return 0

        def send(self, message, limit=None):
            if limit is not None and self.size > limit:
                return None
            self.sent.append(message[1].id)
            return self.size

    cases = load_case_file(Path(__file__).resolve().parent.parent / "cases" / "avg_pool2d_backward.yaml")[1][:8]
    for size, expected_ahead in ((1_000, supervisor.LOOKAHEAD), (12_000, 1), (40_000, 0)):
        ex = supervisor.CaseExecutor({"backend": "torch"})
        try:
            ex._chan, ex._alive, ex._log = FakeChannel(size), lambda: True, tmp_path / "worker.log"
            ex._send(cases[0], 10.0)                               # the head: always sent
            for c in cases[1:]:
                ex.offer(c, 10.0)
            assert ex._chan.sent == [c.id for c in cases[:1 + expected_ahead]], (size, ex._chan.sent)
            assert sum(s.nbytes for s in ex._queue[1:]) <= supervisor.AHEAD_BYTES
        finally:
            ex._chan, ex._alive = None, lambda: False
            ex._queue.clear()
            ex.close()
