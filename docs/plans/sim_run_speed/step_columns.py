"""The metrics' step frame from columns gathered in memory, against parsing the trace back (measured, not built).

    PYTHONPATH=TREE python docs/plans/sim_run_speed/step_columns.py RUN/steps/sim-continuous-t0.jsonl

Rebuilds the trace's `StepRecord`s, gathers the 30 scalar fields of each as the simulator's sink would
(`operator.itemgetter` on the record's `__dict__`), builds the frame `parse_step_counts` gives, checks it
equal (exactly) and prints the time of each part beside the parse's.
"""

import gc
import sys
import time
from operator import itemgetter
from pathlib import Path

import numpy as np
import orjson
import pandas as pd

from engines.step_record import STEP_FIELDS, StepRecord
from harness.metrics import arrow
from harness.metrics.arrow import ID_LISTS, parse_step_counts
from harness.metrics.columns import STEP_RECORD_COLUMNS, typed

path = Path(sys.argv[1])
start = time.perf_counter()
parsed = parse_step_counts(path)
print(f"parse {time.perf_counter() - start:.2f} s")
arrow._TABLES.clear()
records = []
for line in path.read_bytes().splitlines():
    record = StepRecord.__new__(StepRecord)
    record.__dict__.update(orjson.loads(line))
    records.append(record)
names = [n for n in STEP_FIELDS if n not in ID_LISTS]
get = itemgetter(*names)
gc.disable()  # as the loaders run
t0 = time.perf_counter()
rows = [get(record.__dict__) for record in records]  # what the sink would do once per step
t1 = time.perf_counter()
columns = list(zip(*rows, strict=True))
t2 = time.perf_counter()
data = {}
for name, column in zip(names, columns, strict=True):
    kind = parsed[name].dtype
    data[name] = np.array(column, dtype=kind) if kind in (np.int64, np.float64) else column
t3 = time.perf_counter()
frame = pd.DataFrame(data)
t4 = time.perf_counter()
frame["preempted"] = [tuple(p) for p in frame["preempted"]]
typed(frame, STEP_RECORD_COLUMNS, skip=(*ID_LISTS, "preempted"))
for name in ID_LISTS:
    frame[name] = [()] * len(frame)
frame = frame[[c.name for c in STEP_RECORD_COLUMNS]]
t5 = time.perf_counter()
pd.testing.assert_frame_equal(frame, parsed, check_exact=True)
print(f"gather {t1 - t0:.2f} s; zip {t2 - t1:.2f} arrays {t3 - t2:.2f} DataFrame {t4 - t3:.2f} dtypes {t5 - t4:.2f}")
print("equal to the parsed frame")
