"""The fallback rule: when a warning signal has held for `hold_s`, fall back to a simpler, safer setting.

Signals, read from the scheduler at every step (the same definitions as the harness's early warnings,
`harness/metrics/warnings.py`, measured inside the engine):
    wait   the longest time a queued, never admitted request has waited, seconds
    kv     the share of KV blocks in use
    queue  the number of queued requests
Actions: `cap` lowers max_running to `max_running` (fewer sequences share the KV cache and each step, so
TPOT and preemptions fall); `fcfs` or `fair` switches the queue order (every queued request moves over).
The rule fires once per run and is one-way; the switch is a decision in the step trace (stage 5, action
`fallback`, with the signal's value). Off unless the `fallback` engine option is set.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass
from typing import Any

from engines.plan import StepPlan
from engines.sequence import Sequence, SequenceStatus
from engines.stages import Stage

# The threshold of each signal when the option leaves it unset (docs/study.md).
DEFAULT_THRESHOLDS = {"wait": 2.0, "kv": 0.95, "queue": 64.0}


@dataclass(frozen=True)
class FallbackConfig:
    """When (`signal` above `threshold` for `hold_s`) and what (`action`, `max_running` for a cap)."""

    action: str  # "cap", "fcfs" or "fair"
    signal: str = "wait"
    threshold: float | None = None  # None: DEFAULT_THRESHOLDS[signal]
    hold_s: float = 2.0
    max_running: int | None = None  # cap: None halves the configured max_running


class FallbackRule:
    """Watches one signal; once it has held above its threshold for `hold_s`, applies the action."""

    def __init__(self, config: FallbackConfig) -> None:
        self.config = config
        self.threshold = DEFAULT_THRESHOLDS[config.signal] if config.threshold is None else config.threshold
        self.fired = False
        self._since: float | None = None  # when the signal last went above the threshold
        self._arrivals: deque[Sequence] = deque()  # for `wait`: queued requests in arrival order

    def enqueued(self, seq: Sequence) -> None:
        if self.config.signal == "wait":
            self._arrivals.append(seq)

    def signal(self, now: float, scheduler: Any) -> float:
        kind = self.config.signal
        if kind == "kv":
            blocks = scheduler.blocks
            return blocks.num_used / blocks.num_blocks
        if kind == "queue":
            return float(len(scheduler.waiting))
        arrivals, waiting = self._arrivals, SequenceStatus.WAITING
        while arrivals and (arrivals[0].status is not waiting or arrivals[0].admit_time is not None):
            arrivals.popleft()
        return now - arrivals[0].enqueue_time if arrivals else 0.0

    def observe(self, now: float, scheduler: Any, plan: StepPlan) -> None:
        """Called by the scheduler at every step, before it plans."""
        if self.fired:
            return
        value = self.signal(now, scheduler)
        if value <= self.threshold:
            self._since = None
            return
        if self._since is None:
            self._since = now
        if now - self._since < self.config.hold_s:
            return
        self.fired = True
        action, detail = self.config.action, {}
        if action == "cap":
            cap = self.config.max_running or max(1, scheduler.max_running // 2)
            detail = {"max_running": cap, "was": scheduler.max_running}
            scheduler.max_running = min(cap, scheduler.max_running)
        else:
            from engines.policy import switch_policy

            detail = {"policy": action, "was": scheduler.waiting.name}
            scheduler.waiting = switch_policy(scheduler.waiting, action)
        plan.decisions.append(
            {
                "stage": Stage.FILL,
                "action": "fallback",
                "id": None,
                "why": self.config.signal,
                "value": round(value, 4),
                "threshold": self.threshold,
                "held_s": round(now - self._since, 4),
                **detail,
            }
        )
