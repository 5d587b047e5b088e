"""How long a case kept its device busy: the phase 2 + stream sync time of every launch it made.

A case launches more than once where it is checked more than once: a determinism re-run, a batch
slice (batch_slice.py), a repeatable executor's second launch. Its record's `launch_s` is the judged
launch alone (what a timing comparison of two runs wants); `device_s` is all of them, what a device's
utilisation counts (harness/reporting/utilisation.py).
"""
from __future__ import annotations


class LaunchMeter:
    """A backend whose run() adds up each result's launch time (and its second launch's); everything
    else is the backend's own."""

    def __init__(self, backend):
        self._backend = backend
        self.total: float | None = None          # None: no launch reported a time

    def __getattr__(self, name):
        return getattr(self._backend, name)

    def run(self, *args, **kwargs):
        result = self._backend.run(*args, **kwargs)
        for launch in (result, getattr(result, "second", None)):
            seconds = getattr(launch, "launch_s", None)
            if seconds is not None:
                self.total = (self.total or 0.0) + seconds
        return result
