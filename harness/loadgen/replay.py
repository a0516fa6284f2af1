"""One engine, one schedule, one scenario: the replay loop every command shares.

`batchmark run` (and through it `sweep`, `demo` and the pytest plugin), gate calibration's paired replays
and `bench engines` all replay through `replay_engine`: start the engine, offer the schedule as the
scenario says (in real time, or in virtual time for a simulated engine), hand each request's record to
the sink as it finishes (and each step record, on the records' clock, to the step sink), stop the engine.
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Callable, Iterator
from typing import Any

from engines.api import Engine, Request
from engines.step_record import StepRecord
from harness.loadgen.scenarios import LoopOutcome, Progress, RecordSink, Scenario, Scheduled, run_scenario
from harness.loadgen.sessions import run_session_loop, run_virtual_session_loop, tag_sessions
from harness.loadgen.stop_rules import StopRules
from harness.loadgen.virtual import is_virtual, run_virtual_scenario

# An in-process engine's thread holds the GIL between torch calls; the default 5 ms switch interval
# would let it delay the dispatcher by that much. 0.5 ms keeps schedule lag well under 1 ms. It works the
# other way too: a torch op that returns while the event loop runs Python waits for the GIL up to the
# interval (3,000 small matrix products: 0.3 s alone, 17-47 s beside a thread running Python at 5 ms).
GIL_SWITCH_S = 0.0005
# Prompts for engines without a model of ours (HTTP, zero) are drawn from this many ids.
DEFAULT_VOCAB_SIZE = 8192


@contextlib.contextmanager
def dispatcher_first() -> Iterator[None]:
    """While replaying: the GIL switches every `GIL_SWITCH_S`, so the engine thread cannot delay dispatch."""
    switch = sys.getswitchinterval()
    sys.setswitchinterval(GIL_SWITCH_S)
    try:
        yield
    finally:
        sys.setswitchinterval(switch)


def build_schedule(
    workload: Any, vocab_size: int, avoid_ids: tuple[int, ...], seed: int, lengths_only: bool = False
) -> list[Scheduled]:
    """The workload's requests as engine requests with exact-length token prompts (EOS ignored, so the
    trace's output length is what every engine must produce). `lengths_only`: no engine reads the ids
    (simulated engines count tokens), so a prompt is a range of ids of its own (`distinct_prompt`) instead
    of n drawn ids, unless the workload shares prefixes: a simulated prefix cache needs the real blocks."""
    from workloads import token_id_prompts

    if lengths_only and not shares_prefixes(workload):
        prompts: dict[str, Any] = {
            r.request_id: distinct_prompt(i, r.input_tokens) for i, r in enumerate(workload.requests)
        }
    else:
        prompts = token_id_prompts(workload, vocab_size, seed, avoid_ids=avoid_ids)
    return schedule_from(workload, prompts, {})


def schedule_from(workload: Any, ids: dict[str, Any], texts: dict[str, str | None]) -> list[Scheduled]:
    """The workload's requests with these prompts: token ids per request id, and text where there is one
    (else the request's own text, if it brought any)."""
    return [
        Scheduled(
            Request(
                request_id=r.request_id,
                prompt_token_ids=ids[r.request_id],
                max_tokens=r.output_tokens,
                ignore_eos=True,
                tenant=r.tenant,
                priority=r.priority,
                arrival_time=r.arrival_s,
                prompt_text=texts.get(r.request_id, r.prompt_text),
                reasoning_tokens=r.reasoning_tokens,
                slo_class=r.slo_class,
            ),
            r.arrival_s,
            r.session,
            r.turn,
            r.think_s + r.tool_s,
            r.branch,
        )
        for r in workload.requests
    ]


def distinct_prompt(index: int, length: int) -> range:
    """A stand-in prompt for a simulated engine: ids no other request's stand-in has, so its prefix cache
    finds nothing (as with the seeded random ids a real engine is sent)."""
    return range(index << 40, (index << 40) + length)


def shares_prefixes(workload: Any) -> bool:
    """Whether prompts share leading blocks on purpose: Mooncake hash ids, or turns of a session."""
    return any(r.prefix_hash_ids or r.session is not None for r in workload.requests)


async def replay_engine(
    engine: Engine,
    schedule: list[Scheduled],
    scenario: Scenario,
    sink: RecordSink,
    *,
    label: str,
    trial: int = 0,
    steps: Callable[[StepRecord], None] | None = None,
    stop_rules: StopRules | None = None,
    progress: Progress | None = None,
    t0: float | None = None,
    on_origin: Callable[[float], None] | None = None,
) -> LoopOutcome:
    """Start `engine`, offer it `schedule`, stop it. `t0`: the perf_counter() instant a real-time schedule
    starts at (sharded load generation: every worker's shard starts at one agreed instant). Step records
    reach `steps` with times on the records' clock (seconds from the loop's t0). A virtual-time engine (the
    simulator) is offered it in virtual time (`virtual.py`): its clock starts at t0 = 0, so its step records
    need no shift. Records of session turns carry their session and turn, whatever the scenario."""
    sink = tag_sessions(sink, schedule)
    common: dict[str, Any] = {"label": label, "trial": trial, "stop_rules": stop_rules, "progress": progress}
    if is_virtual(engine):
        engine.set_step_sink(steps)
        await engine.start()
        try:
            if scenario.kind == "sessions":
                return run_virtual_session_loop(engine, schedule, sink, **common)
            return run_virtual_scenario(engine, schedule, sink, scenario, **common)
        finally:
            await engine.stop()
            engine.set_step_sink(None)
    origin = [0.0]

    def started(start: float) -> None:  # the perf_counter() instant record times count from
        origin[0] = start
        if on_origin is not None:
            on_origin(start)

    def shifted(record: StepRecord) -> None:
        record.t_start -= origin[0]
        record.t_end -= origin[0]
        steps(record)  # type: ignore[misc]

    if steps is not None:
        engine.set_step_sink(shifted)
    await engine.start()
    try:
        if scenario.kind == "sessions":
            return await run_session_loop(engine, schedule, sink, on_start=started, t0=t0, **common)
        return await run_scenario(engine, schedule, sink, scenario, on_start=started, t0=t0, **common)
    finally:
        await engine.stop()
        engine.set_step_sink(None)
