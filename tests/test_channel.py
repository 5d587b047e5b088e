"""The pipe protocol between a supervisor and its case worker (harness/execution/channel.py)."""
from __future__ import annotations

import os

from harness.execution.channel import Channel


def _pair():
    a_read, b_write = os.pipe()
    b_read, a_write = os.pipe()
    return Channel(a_read, a_write), Channel(b_read, b_write)


def test_a_shared_object_crosses_once_and_is_referenced_after():
    sup, worker = _pair()
    try:
        spec = {"op": "MaxPool2dWithIndicesBackward", "params": list(range(500))}
        for i in range(3):
            sup.share(spec)
            sup.send(("run", {"case": i, "op": spec}))
        got = [worker.recv() for _ in range(3)]
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
    spec = ["opspec"] * 100
    for _ in range(2):
        sup, worker = _pair()
        try:
            sup.share(spec)
            sup.send(("run", spec))
            assert worker.recv() == ("run", spec)
        finally:
            sup.close()
            worker.close()
