"""Perf: is a case slower than its baseline, for real? Everything that judges launch times across
runs lives here; what must sit lower in the layers, so that a case worker can use it, is one
module per layer, named below.

Reading order, bottom up:

* runs.py: a baseline built from several runs, the spread between them (the noise a new run is
  judged against, not only the one within a run).
* baseline.py: the perf baseline file (`kind: perf`): writing one from runs, reading and checking
  one, picking the entry of a case; ab.py: the interleaved A/B re-measurement against the
  baseline's library, where it is at hand.
* gate.py: the verdict of each measured case (REGRESSION, IMPROVEMENT, SAME, noise), its
  re-measurement, the offline gate's same verdict.
* summary.py: what a run measured, for summary.json, summary.md and report.html.

Below the reporting layers, by necessity:

* harness/core/perfstats.py: the statistics (rank test, the ratio's interval), shared with the
  history;
* harness/core/paired.py: the paired comparison of A/B rounds;
* harness/judge/perf.py: one case's samples taken in the case worker (the stopping rule, launch
  times outside physical bounds, the label of what a time means: CPU, modelled or device time);
  harness/judge/peak_bandwidth.py: the least time a launch moving a case's bytes can take;
* harness/backends/aclnn_perf.py: timing a launch with the runtime's events.

Above: harness/history/perf.py (a case's times across stored runs), harness/audit/perf_score.py
(the gate scored against planted slowdowns) and the perf plots (harness/reporting/plots.py).
"""
