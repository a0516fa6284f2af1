"""The load generator: offers a schedule of requests to one engine through the one engine interface
(`engines.api.Engine`) and writes one record per request as it finishes. It knows nothing else of the
system under test.

`scenarios.py` holds the timing rules (open, closed, offline loops; the scenario is a run setting),
`stop_rules.py` the limits that end a run early, `replay.py` the one replay loop every command shares
and the schedule it replays. Imports: `engines.api` (and the step record), `workloads`, `harness.records`.
"""

from harness.loadgen.replay import (
    DEFAULT_VOCAB_SIZE,
    build_schedule,
    dispatcher_first,
    replay_engine,
    schedule_from,
)
from harness.loadgen.scenarios import (
    LoopOutcome,
    Progress,
    RecordSink,
    Scenario,
    Scheduled,
    run_closed_loop,
    run_open_loop,
    run_scenario,
)
from harness.loadgen.stop_rules import StopRules, StopState

__all__ = [
    "DEFAULT_VOCAB_SIZE",
    "LoopOutcome",
    "Progress",
    "RecordSink",
    "Scenario",
    "Scheduled",
    "StopRules",
    "StopState",
    "build_schedule",
    "dispatcher_first",
    "replay_engine",
    "run_closed_loop",
    "run_open_loop",
    "run_scenario",
    "schedule_from",
]
