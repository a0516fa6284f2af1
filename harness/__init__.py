"""The load generator and everything around it: it drives the engines, measures and judges.

`loadgen/` offers a workload's schedule to an engine through the one engine interface and writes a record
per request (`records.py` is the record's schema); `run.py` makes a run directory of paired engines x
trials; `engine_specs.py` builds engines from `KIND:key=value` specs and the engine option table;
`metrics/` computes everything from records and step traces; `gate/` judges a candidate against a
baseline; `sweep/` climbs offered rates; `executor/` runs independent units here or on Ray, and `shards/`
splits one schedule over several load-generator workers; `calibrate.py` and `bench_engines.py` run engines
for the gate's calibration and the engine comparison; `probe.py` tests a black-box endpoint; `demo.py`
sizes the default benchmark to the machine; `machine.py` samples the machine's own load around each trial;
`progress.py` shows a run's progress; `importers/` turns other tools' results (vLLM, GuideLLM, AIPerf)
into run directories; `cli/` sits on top.
Imports: `engines` and `workloads` (never the other way); only `cli/` imports `reports`.
"""
