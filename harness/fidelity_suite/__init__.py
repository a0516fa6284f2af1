"""A pre-registered fidelity suite (`batchmark sim fidelity --suite FILE`): workload/engine pairs chosen and
committed before measuring, each run for real, replayed through its simulated twin, and reported whole.

- `spec.py`: the suite file (TOML), read and checked before any run;
- `measure.py`: the real runs and the fit run, each under the machine's timing lock;
- `table.py`: every pair's errors, the real run's trial spread, its verdict, and the suite's summary;
- `command.py`: the options and the command (`harness/cli/sim.py` registers them).
"""
