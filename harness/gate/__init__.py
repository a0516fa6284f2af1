"""The CI regression gate: noise-aware rules comparing a candidate run with a baseline (docs/gate.md).

Pure judging: rules and their settings (`rules.py`, `config.py`, what a rule may name in `catalog.py`),
the verdict, and the calibration statistics (`calibration.py`), on top of the judge (`harness.judge`:
pairing, the tests, the trial-level test, and the three-outcome decision). It never runs an engine
(`harness/calibrate.py` does, for calibration). Imports: `harness.judge`, `harness.metrics` and the
harness's errors only.

```python
from harness.gate import GateConfig, evaluate, load_run, rules_from_texts

config = GateConfig(rules=rules_from_texts(["ttft.p99 <= +10%", "goodput >= -5%"]))
verdict = evaluate(config, load_run(Path("runs/base")), load_run(Path("runs/new")))
verdict.passed, verdict.to_json()
```
"""

from __future__ import annotations

import importlib
from typing import Any

# name -> the module that defines it. Loaded on first use, so that reading the settings (`GateConfig`,
# for the command line's flags) does not pull in pandas and scipy with the statistics.
_WHERE = {
    "GateConfig": "config",
    "load_rules_file": "config",
    "merged": "config",
    "rules_from_texts": "config",
    "settings_problem": "config",
    "evaluate": "judge",
    "RunSample": "inputs",
    "load_run": "inputs",
    "sample_from_records": "inputs",
    "one_line": "markdown",
    "to_markdown": "markdown",
    "Rule": "rules",
    "RuleError": "rules",
    "Threshold": "rules",
    "parse_rule": "rules",
    "RuleResult": "verdict",
    "Verdict": "verdict",
}
__all__ = sorted(_WHERE)


def __getattr__(name: str) -> Any:
    if name not in _WHERE:
        raise AttributeError(f"module 'harness.gate' has no attribute {name!r}")
    return getattr(importlib.import_module(f"harness.gate.{_WHERE[name]}"), name)
