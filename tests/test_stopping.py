"""SIGTERM and SIGHUP stop a run as Ctrl-C does (harness/execution/stopping.py), in this process.
The end-to-end runs are in test_robust.py."""
from __future__ import annotations

import os
import signal

import pytest

from harness.execution.stopping import StopSignals


@pytest.fixture
def default_handlers():
    """SIGTERM and SIGHUP at their defaults for the test (pytest under nohup would inherit SIGHUP
    ignored), put back as they were afterwards."""
    saved = {s: signal.getsignal(s) for s in (signal.SIGTERM, signal.SIGHUP)}
    for s in saved:
        signal.signal(s, signal.SIG_DFL)
    yield
    for s, h in saved.items():
        signal.signal(s, h)


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGHUP], ids=lambda s: s.name)
def test_a_stop_signal_raises_keyboard_interrupt_once(default_handlers, sig):
    stop = StopSignals()
    stop.install()
    try:
        with pytest.raises(KeyboardInterrupt, match=f"{sig.name} received: stopping the run"):
            os.kill(os.getpid(), sig)
        assert stop.describe().startswith(f"{sig.name} at ")
        assert signal.getsignal(sig) == signal.SIG_DFL           # a second one kills at once
    finally:
        stop.restore()


def test_restore_puts_back_the_handlers_it_replaced(default_handlers):
    def mine(*_):
        pass
    signal.signal(signal.SIGTERM, mine)
    stop = StopSignals()
    stop.install()
    assert signal.getsignal(signal.SIGTERM) == stop._stop
    stop.restore()
    assert signal.getsignal(signal.SIGTERM) is mine
    assert stop.describe() is None


def test_an_ignored_sighup_stays_ignored(default_handlers):
    signal.signal(signal.SIGHUP, signal.SIG_IGN)                 # nohup
    stop = StopSignals()
    stop.install()
    try:
        assert signal.getsignal(signal.SIGHUP) == signal.SIG_IGN
        os.kill(os.getpid(), signal.SIGHUP)                      # nothing happens
        assert stop.describe() is None
    finally:
        stop.restore()


def test_while_the_reports_are_written_a_stop_is_only_noted(default_handlers):
    stop = StopSignals()
    stop.install()
    stop.finishing()
    try:
        os.kill(os.getpid(), signal.SIGTERM)                     # no KeyboardInterrupt
        assert stop.describe().startswith("SIGTERM at ")
    finally:
        stop.restore()
