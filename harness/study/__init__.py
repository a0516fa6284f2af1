"""`batchmark study`: a baseline and variants that each change one assumption, judged by a plan written first.

- `plan.py`     the acceptance plan (TOML): decision, baseline, variants, metrics with thresholds, the
                tuning and held-out slices; checked, hashed
- `variants.py` one-assumption changes, expressed through the engine option table
- `metrics.py`  the metrics a plan can name
- `runner.py`   units (arm x slice x trial), each a plain function call; `execute` maps them
- `verdict.py`  pick on tuning, confirm on held-out: "held", "falsified" or "cannot tell", each threshold
                decided by the judge on an interval; wins with intervals, Pareto front

Imports `harness.metrics`, `harness.run`, `engines` and `workloads`; never the CLI or `reports`.
"""
