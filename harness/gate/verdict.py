"""The gate's answer: one result per rule, and the verdict over all of them.

Each rule ends in one of three outcomes, decided on the interval of its change (harness.judge.verdict):
`pass` when the interval's worse end is inside the threshold, `fail` when its better end is outside, and
otherwise `inconclusive` ("cannot tell"), with the trials or requests that would decide it. Cannot tell
does not pass (exit 3) unless the gate was told to allow it (`allow_inconclusive`, recorded in the
verdict): a gate that passes whatever it cannot resolve cannot fail. A rule that
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
VERDICT_SCHEMA_VERSION = 1
EXIT_PASS, EXIT_REGRESSION, EXIT_NO_DATA = 0, 1, 3  # 2 is invalid input (harness.cli)


@dataclass
class RuleResult:
    """One rule's outcome: pass, fail, inconclusive (cannot tell) or no_data, with the numbers behind it."""

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
    identical_trials: bool = False  # judged by trials, each side's one value repeated (harness.judge.tests)
    test: str = ""
    alpha: float = 0.05
    paired: bool = False
    n_baseline: int = 0
    n_candidate: int = 0
    past_threshold: bool = False
    significant: bool = False
    line: int | None = None
    note: str = ""  # for no_data and inconclusive: why the rule could not be judged or decided
    needed: int | None = None  # inconclusive: samples per side that would decide it at the observed change
    needed_unit: str = ""  # "trials" or "requests"
    undecidable: bool = False  # the data cannot carry a decision whatever the interval (reason in `note`)
    quantity: str = ""  # what `change` estimates, in words (`quantity`): not what `compare` estimates


def quantity(r: RuleResult) -> str:
    """What a rule's `change` and interval estimate, named in every output of the gate. The gate tests a
    change of the statistic itself, one-sided against the rule's tolerance; `compare` estimates the median
    of per-request differences, two-sided (docs/gate.md, *The gate and compare*)."""
    if r.threshold_kind == "absolute":
        return f"the candidate's {r.name}, one-sided against the limit"
    change = "candidate / baseline - 1" if r.threshold_kind == "relative" else "candidate - baseline"
    if r.trial_sd is not None:  # judged by trials (harness.judge.trials)
        how = "mean of per-trial log ratios" if r.threshold_kind == "relative" else "mean of per-trial differences"
        pairs = "trials paired" if r.paired else "trials unpaired"
        return f"{r.name} of each trial, {change} ({how}, {pairs}), one-sided against the tolerance"
    pooled = "requests paired" if r.paired else "requests unpaired"
    return f"{r.name} of each side's pooled requests, {change} ({pooled}), one-sided against the tolerance"


@dataclass
class Verdict:
    """Every rule's result and the gate's exit code."""

    results: list[RuleResult]
    pairing: dict[str, Any]
    baseline: dict[str, Any] | None
    candidate: dict[str, Any]
    settings: dict[str, Any]
    notes: list[str] = field(default_factory=list)
    allow_inconclusive: bool = False  # the team chose to pass rules the data cannot decide

    @property
    def failing(self) -> tuple[str, ...]:
        return ("fail", "no_data") if self.allow_inconclusive else ("fail", "no_data", "inconclusive")

    @property
    def passed(self) -> bool:
        return not any(r.status in self.failing for r in self.results)

    @property
    def regressed(self) -> bool:
        """A rule found a regression (what calibration counts as the gate's alarm)."""
        return any(r.status == "fail" for r in self.results)

    @property
    def exit_code(self) -> int:
        """0 pass; 1 a regression (whatever else); 3 no regression, but a rule had no data or cannot tell."""
        return EXIT_REGRESSION if self.regressed else EXIT_PASS if self.passed else EXIT_NO_DATA

    @property
    def failed(self) -> list[RuleResult]:
        return [r for r in self.results if r.status in self.failing]

    @property
    def word(self) -> str:
        """pass, fail, cannot_tell or no_data."""
        if self.passed or self.regressed:
            return "pass" if self.passed else "fail"
        return "no_data" if any(r.status == "no_data" for r in self.results) else "cannot_tell"

    def to_json(self) -> dict[str, Any]:
        return jsonable(
            {
                "schema_version": VERDICT_SCHEMA_VERSION,
                "verdict": self.word,
                "exit_code": self.exit_code,
                "allow_inconclusive": self.allow_inconclusive,
                "rules": [asdict(r) for r in self.results],
                "pairing": self.pairing,
                "baseline": self.baseline,
                "candidate": self.candidate,
                "settings": self.settings,
                "notes": self.notes,
            }
        )
