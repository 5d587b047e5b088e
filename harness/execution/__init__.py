"""Running cases robustly: each case runs in a supervised worker process with a deadline
(crash and hang isolation, device recovery), every result goes to a per-worker journal,
and one run at a time owns a report directory (harness/execution/rundir.py)."""
