"""The gate's answer: one result per rule, and the verdict over all of them.

A rule fails only when its regression is past the threshold *and* significant; past the threshold
without significance is `inconclusive` (it passes: the data do not show a regression). A rule that
cannot be evaluated (`no_data`: an empty or degenerate steady window, zero on both sides of a
more-is-better metric, fewer values than `min_samples`) fails the gate too, with its reason in `note`
and its own exit code: a candidate that produced nothing to measure must not pass, and a CI log should
say "nothing was measured" apart from "it got slower".
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any, Literal

from harness.metrics import jsonable

Status = Literal["pass", "inconclusive", "fail", "no_data"]
FAILING: tuple[str, ...] = ("fail", "no_data")
VERDICT_SCHEMA_VERSION = 1
EXIT_PASS, EXIT_REGRESSION, EXIT_NO_DATA = 0, 1, 3  # 2 is invalid input (harness.cli)


@dataclass
class RuleResult:
    """One rule's outcome: pass, fail or no_data, with the numbers behind it."""

    rule: str
    name: str  # metric or metric.stat
    threshold_kind: str  # relative, delta or absolute
    threshold: float  # in the rule's terms: a fraction, a delta or a limit, in base units (s, tok/s, share)
    unit: str
    status: Status
    baseline: float | None = None
    candidate: float | None = None
    change: float | None = None  # relative: fraction; delta: candidate - baseline; absolute: the candidate value
    ci_low: float | None = None  # interval of `change`, each end a one-sided (1 - alpha) bound
    ci_high: float | None = None
    p_value: float | None = None
    trial_sd: float | None = None  # judged by trials: sd of one trial's change (log scale for relative rules)
    test: str = ""
    alpha: float = 0.05
    paired: bool = False
    n_baseline: int = 0
    n_candidate: int = 0
    past_threshold: bool = False
    significant: bool = False
    line: int | None = None
    note: str = ""  # for no_data: why the rule could not be judged


@dataclass
class Verdict:
    """Every rule's result and the gate's exit code."""

    results: list[RuleResult]
    pairing: dict[str, Any]
    baseline: dict[str, Any] | None
    candidate: dict[str, Any]
    settings: dict[str, Any]
    notes: list[str] = field(default_factory=list)

    @property
    def passed(self) -> bool:
        return not any(r.status in FAILING for r in self.results)

    @property
    def exit_code(self) -> int:
        """0 pass; 1 a regression (whatever else); 3 no regression, but a rule had no data."""
        statuses = {r.status for r in self.results}
        return EXIT_REGRESSION if "fail" in statuses else EXIT_NO_DATA if "no_data" in statuses else EXIT_PASS

    @property
    def failed(self) -> list[RuleResult]:
        return [r for r in self.results if r.status in FAILING]

    def to_json(self) -> dict[str, Any]:
        return jsonable(
            {
                "schema_version": VERDICT_SCHEMA_VERSION,
                "verdict": "pass" if self.passed else "fail" if self.exit_code == EXIT_REGRESSION else "no_data",
                "exit_code": self.exit_code,
                "rules": [asdict(r) for r in self.results],
                "pairing": self.pairing,
                "baseline": self.baseline,
                "candidate": self.candidate,
                "settings": self.settings,
                "notes": self.notes,
            }
        )
