"""The CI regression gate: noise-aware rules comparing a candidate run with a baseline (docs/gate.md).

Pure judging: rules and their settings (`rules.py`, `config.py`, what a rule may name in `catalog.py`),
pairing, significance tests and trial statistics, the verdict, and the calibration statistics
(`calibration.py`). It never runs an engine (`harness/calibrate.py` does, for calibration). Imports:
`harness.metrics` and the harness's errors only.

```python
from harness.gate import GateConfig, evaluate, load_run, rules_from_texts

config = GateConfig(rules=rules_from_texts(["ttft.p99 <= +10%", "goodput >= -5%"]))
verdict = evaluate(config, load_run(Path("runs/base")), load_run(Path("runs/new")))
verdict.passed, verdict.to_json()
```
"""

from __future__ import annotations

from harness.gate.config import GateConfig, load_rules_file, merged, rules_from_texts, settings_problem
from harness.gate.evaluate import evaluate
from harness.gate.inputs import RunSample, load_run, sample_from_records
from harness.gate.markdown import one_line, to_markdown
from harness.gate.rules import Rule, RuleError, Threshold, parse_rule
from harness.gate.verdict import RuleResult, Verdict

__all__ = [
    "GateConfig",
    "Rule",
    "RuleError",
    "RuleResult",
    "RunSample",
    "Threshold",
    "Verdict",
    "evaluate",
    "load_rules_file",
    "load_run",
    "merged",
    "one_line",
    "parse_rule",
    "rules_from_texts",
    "sample_from_records",
    "settings_problem",
    "to_markdown",
]
