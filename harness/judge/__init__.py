"""One judge for every comparison of two runs: `metrics.json`, `compare`, the report, `gate` and `study`.

- `pairing.py`: whether two samples are compared request by request (one rule, used by all);
- `tests.py`: the paired and unpaired tests, bootstrap intervals (a study's over trials too) and the one
  multiplicity correction (Holm);
- `trials.py`: the trial-level test (a t-test over per-trial statistics, paired by trial when the trials
  replayed one schedule), for runs of several trials each, and when it applies;
- `verdict.py`: three outcomes (holds / fails / cannot tell) from an interval against a tolerance, and the
  bound below which a percentile is not resolved.
- `headline.py`: the report's headline metrics across engine runs, and which one clearly wins each
  (intervals that do not overlap).

Callers keep only their own rules on top (the gate's thresholds, a study's acceptance plan); `reports/`
only renders what this decided. Imports: numpy, scipy and pandas only.
"""
