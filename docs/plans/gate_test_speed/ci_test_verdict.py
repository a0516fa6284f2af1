"""Run tests/gate/test_ci_example.py's test once (from a tree's root); print each rule's status and change,
then PASS or FAIL and the seconds it took. Prints go to stderr (the runs' own output is on stdout)."""

from __future__ import annotations

import pathlib
import sys
import tempfile
import time

sys.path.insert(0, "tests/gate")
import test_ci_example as example  # found through the path above

evaluate = example.evaluate


def printed_evaluate(*args, **kwargs):
    verdict = evaluate(*args, **kwargs)
    for r in verdict.results:
        print(f"   {r.rule:24} {r.status:12} change={r.change}", file=sys.stderr)
    return verdict


example.evaluate = printed_evaluate
start = time.time()
try:
    example.test_the_ci_example_catches_a_slowdown_on_its_own_workload(pathlib.Path(tempfile.mkdtemp()))
    outcome = "PASS"
except AssertionError as exc:
    outcome = f"FAIL {str(exc)[:300]}"
print(f"{outcome} {time.time() - start:.1f} s", file=sys.stderr)
