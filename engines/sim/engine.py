"""The simulated engine: the real schedulers, a cost model instead of a model, a virtual clock.

A discrete-event loop. The load generator hands each request over at its scheduled (virtual) time and
lets the engine run until the next one is due (`run_until`). Each step is exactly what an in-process
engine does: the scheduler plans (stages 2, 3, 5), the cost model predicts how long computing the plan
takes, the clock advances by that much, and the scheduler retires what finished (stage 4), so every
admission, deferral, preemption and finish is the unchanged scheduler's decision. Tokens exist when
their step ends, as in the in-process engine; the step trace records the same fields.
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Any, Literal, Protocol

from engines.aging import aged
from engines.api import FinishEvent, Request, SpecDecodeCounts, StepSink
from engines.block_manager import BlockManager
from engines.engine_core import step_record
from engines.policy import make_policy
from engines.scheduler import ContinuousConfig, ContinuousScheduler
from engines.sequence import Sequence, SequenceStatus
from engines.sim.decode_run import FINISHING, SIM_TOKEN, decode_run_steps, run_decode
from engines.sim.shape_speed import shape_key
from engines.sim.spec_decode import AcceptanceHistogram
from engines.sim.static_step import finishing_step
from engines.static_scheduler import StaticConfig, StaticScheduler
from engines.step_features import StepFeatures, step_features


class CostModel(Protocol):
    kind: str

    def step_time(self, features: StepFeatures) -> float: ...
    def describe(self) -> dict[str, Any]: ...


# (t_start, t_end, admitted ids, ids that got a token at t_end, finish events) -> pause?
StepCallback = Callable[[float, float, list[str], list[str], list[FinishEvent]], bool]
# (ids, the end of each step of a decode run: every id got a token at each) -> pause? (engines/sim/decode_run.py)
DecodeCallback = Callable[[list[str], list[float]], bool]


@dataclass(frozen=True)
class SimOptions:
    kind: Literal["static", "continuous"] = "continuous"
    policy: str = "fcfs"
    aging_s: float | None = None  # starvation aging (engines/aging.py)
    static: StaticConfig = field(default_factory=StaticConfig)
    continuous: ContinuousConfig = field(default_factory=ContinuousConfig)
    block_size: int = 16
    num_blocks: int = 1
    step_gap_s: float = 0.0  # engine-loop time between two steps (a fitted profile measures it)
    # from a request's arrival at an idle engine to the start of the step that admits it (a fitted profile
    # measures it: waking the loop, and with the engine in its own process a pipe between them)
    dispatch_s: float = 0.0
    slowdown: float = 0.0  # every step takes this share longer (gate calibration's injected regression)
    step_scale: float = 1.0  # every step's time times this: a twin at its real trial's measured speed
    # the step shapes (engines/sim/shape_speed.py's keys) step_scale applies to, every other step at its plain
    # price: a speed measured on the fit runs' shapes says nothing of a shape they never ran; None: every step
    step_scale_shapes: frozenset[str] | None = None
    prefix_caching: bool = True  # cached prefix tokens are taken, not computed, so they cost no step time
    # speculative decoding (engines/sim/spec_decode.py): every decode is a verify step of k+1 query tokens that
    # emits 1 + A tokens, A drawn from this measured histogram with `spec_seed`; None: plain decoding
    spec_decode: AcceptanceHistogram | None = None
    spec_seed: int = 0


class SimEngine:
    """A virtual-time engine (see the module docstring). `describe()` says it is simulated and how."""

    virtual_time = True
    decode_runs = True  # run stretches of pure decode steps at once (engines/sim/decode_run.py); same outcome

    def __init__(
        self,
        options: SimOptions,
        cost: CostModel,
        *,
        max_context: int,
        name: str | None = None,
        description: dict[str, Any] | None = None,
        step_noise: Callable[[float, StepFeatures], float] | None = None,
        gap_noise: Callable[[], float] | None = None,
    ) -> None:
        self.name = name or f"sim-{options.kind}"
        self.options = options
        self.cost = cost
        self.max_context = max_context
        self.blocks = BlockManager(options.num_blocks, options.block_size, options.prefix_caching)
        policy = aged(make_policy(options.policy), options.aging_s)
        self.scheduler: StaticScheduler | ContinuousScheduler
        if options.kind == "static":
            self.scheduler = StaticScheduler(options.static, policy, self.blocks, None)
        else:
            self.scheduler = ContinuousScheduler(options.continuous, policy, self.blocks, None)
        self._description = description or {}
        self._step_noise = step_noise  # predicted step time -> noisy one (engines.sim.noise)
        self._gap_noise = gap_noise  # each gap between steps, instead of the mean gap
        self.now = 0.0
        self._seq_no = 0
        self._step = 0
        self.step_sink: StepSink | None = None
        self._spec_rng = random.Random(options.spec_seed)
        self._spec_counts: dict[str, list[int]] = {}  # request id -> [drafts, draft tokens, accepted tokens]
        if isinstance(self.scheduler, ContinuousScheduler) and self.scheduler.admission is not None:
            self.scheduler.admission.price_with(self.expected_step_s)  # the guard predicts on this cost model

    def expected_step_s(self, features: StepFeatures) -> float:
        """What a step of `features` adds to the clock here, noise aside: the cost model's time, the injected
        slowdown, the gap between steps. (A cost model that counts the steps it prices offers `quote` for a step
        that is only forecast.)"""
        price = getattr(self.cost, "quote", self.cost.step_time)
        return price(features) * (1.0 + self.options.slowdown) * self.step_scale_of(features) + self.options.step_gap_s

    def step_scale_of(self, features: StepFeatures) -> float:
        """The scale a step of `features` is priced at: `step_scale`, or 1.0 for a step whose shape
        (`engines.sim.shape_speed.shape_key`) is not among `step_scale_shapes` when those are given."""
        scale, shapes = self.options.step_scale, self.options.step_scale_shapes
        if scale == 1.0 or shapes is None or shape_key(features) in shapes:
            return scale
        return 1.0

    # -- the narrow interface the virtual-time load generator uses ----------------------------------------
    async def start(self) -> None:
        self.now = 0.0
        self.blocks.reset()

    async def stop(self) -> None:
        return None

    def set_step_sink(self, sink: StepSink | None) -> None:
        self.step_sink = sink

    def submit(self, request: Request, at: float) -> FinishEvent | None:
        """Request `request` arrives at virtual time `at` (never before the clock). Returns a finish
        event at once when the request can never be served."""
        idle = not self.scheduler.has_work()
        self.now = max(self.now, at + self.options.dispatch_s if idle else at)
        problem = self._problem(request)
        if problem is not None:
            return FinishEvent(
                request.request_id,
                "error",
                len(request.prompt_token_ids),
                0,
                self.now,
                error_type="invalid_request",
                error_message=problem,
            )
        seq = Sequence.from_request(request, self._seq_no, self.now)
        self._seq_no += 1
        self.scheduler.enqueue(seq)
        if seq.status is SequenceStatus.FINISHED:  # shed by admission control
            return FinishEvent(
                request.request_id,
                "error",
                seq.num_prompt_tokens,
                0,
                self.now,
                error_type=seq.error_type,
                error_message=seq.error_message,
            )
        return None

    def abort(self, request_id: str) -> FinishEvent | None:
        seq = self.scheduler.abort(request_id)
        if seq is None:
            return None
        return FinishEvent(
            seq.request_id,
            "abort",
            seq.num_prompt_tokens,
            seq.num_output_tokens,
            self.now,
            preemptions=seq.preemptions,
            spec_decode=self._spec_done(request_id),
        )

    def step_duration(self, features: StepFeatures) -> float:
        """How long a step of `features` takes: the cost model's time, then its noise, the slowdown, the scale (every
        loop that runs steps prices them here, in this order, so their floats are the same)."""
        duration = self.cost.step_time(features)
        if self._step_noise is not None:
            duration = self._step_noise(duration, features)
        if self.options.slowdown:
            duration *= 1.0 + self.options.slowdown
        if self.options.step_scale != 1.0:  # the plain run's hot path skips the shape check
            duration *= self.step_scale_of(features)
        return duration

    def next_start(self, t_end: float) -> float:
        """When the step after one that ended at `t_end` starts: after the gap between steps (or its noise)."""
        return t_end + (self.options.step_gap_s if self._gap_noise is None else self._gap_noise())

    def run_until(self, until: float, on_step: StepCallback, on_decode: DecodeCallback | None = None) -> None:
        """Run every step that starts before `until` (math.inf: until no work is left); idle time
        moves the clock to `until`. Returns early when `on_step` asks to pause. With `on_decode`, stretches of
        pure decode steps (no admission, finish or preemption) run at once and are reported to it instead:
        the caller must not need a pause after a step that finished nothing."""
        scheduler = self.scheduler
        while self.now < until:
            if not scheduler.has_work():
                if until != math.inf:
                    self.now = until
                return
            if on_decode is not None and self.decode_runs and (steps := decode_run_steps(self)):
                if steps == FINISHING:  # a static batch's members reach their length: the step without a plan
                    if finishing_step(self, on_step):
                        return
                    continue
                ids, ends = run_decode(self, steps, until)
                if ends:  # none when the pool could not grow every sequence: then the step-by-step loop preempts
                    if on_decode(ids, ends):
                        return
                    continue
            plan = scheduler.schedule(self.now)
            if not plan.chunks:  # a static batch still forming: wait for its timeout or the next arrival
                wake = scheduler.next_wakeup(self.now)
                if wake is None or wake <= self.now:
                    raise RuntimeError(f"{self.name}: the scheduler holds work but planned nothing at t={self.now}")
                self.now = min(wake, until)
                continue
            features = step_features(plan)
            t_start = self.now
            spec = self.options.spec_decode
            extra = self._speculate(plan, spec) if spec is not None else {}
            t_end = t_start + self.step_duration(features if spec is None else _verify_features(features, plan, spec.k))
            admitted = []
            if plan.admitted:  # a sequence is first planned in the step that admits it
                for chunk in plan.chunks:
                    seq = chunk.seq
                    if seq.admit_time is None:
                        seq.admit_time = t_start
                        admitted.append(seq.request.request_id)
            sampled = [c.seq.request.request_id for c in plan.chunks if c.yields_token]  # each computes >= 1 token
            finished = scheduler.remove_finished(plan, [SIM_TOKEN] * len(sampled))
            if extra:  # accepted draft tokens exist when the verify step ends, as its own token does
                sampled += [rid for rid, n in extra.items() for _ in range(n)]
            done = self._finish_events(finished, t_end)
            if self.step_sink is not None:
                used = self.blocks.num_used
                self.step_sink(
                    step_record(
                        self._step, scheduler, plan, finished, t_start, t_end, used, self.blocks.num_blocks, features
                    )
                )
            self._step += 1
            self.now = self.next_start(t_end)
            if on_step(t_start, t_end, admitted, sampled, done):
                return

    def _speculate(self, plan: Any, spec: AcceptanceHistogram) -> dict[str, int]:
        """Accepted draft tokens per decoding sequence of `plan` (request id -> A >= 1), drawn from the measured
        histogram, never past `max_tokens`, and only as far as free KV blocks hold them; each sequence is advanced
        by them here, so the step's own token then lands after them and the normal retirement finishes it."""
        out: dict[str, int] = {}
        blocks = self.blocks
        for chunk in plan.chunks:
            seq = chunk.seq
            if not _decoding(chunk):
                continue
            room = seq.request.max_tokens - seq.num_output_tokens - 1  # the step's own token comes after these
            if room <= 0:
                continue  # the step's own token is its last: nothing to draft
            accepted = min(spec.draw_emitted(self._spec_rng) - 1, room)
            # counted as emitted: a verify step drafts at most what max_tokens leaves room for, and accepts
            # only what the KV pool can hold, so 1 + accepted is what the step gave this sequence
            counts = self._spec_counts.setdefault(seq.request.request_id, [0, 0, 0])
            counts[0] += 1
            counts[1] += min(spec.k, room)
            if accepted <= 0:
                continue
            total = seq.num_computed_tokens + chunk.num_tokens + accepted
            need = blocks.blocks_for_tokens(total) - len(seq.block_table)
            if need > 0:
                if not blocks.can_allocate(need):
                    continue  # no KV room for the drafts: this step keeps its one token
                blocks.allocate(seq, need)
            seq.num_computed_tokens += accepted
            seq.token_ids.extend([SIM_TOKEN] * accepted)
            seq.num_output_tokens += accepted
            counts[2] += accepted
            out[seq.request.request_id] = accepted
        return out

    def _finish_events(self, finished: list[Sequence], t_end: float) -> list[FinishEvent]:
        """What the load generator is told of the sequences a step at `t_end` finished (each sequence once:
        its speculative counts are taken)."""
        return [
            FinishEvent(
                s.request_id,
                s.finish_reason or "length",
                s.num_prompt_tokens,  # type: ignore[arg-type]
                s.num_output_tokens,
                t_end,
                preemptions=s.preemptions,
                cached_tokens=s.num_cached_tokens,
                spec_decode=self._spec_done(s.request_id),
            )
            for s in finished
        ]

    def _spec_done(self, request_id: str) -> SpecDecodeCounts | None:
        """A finished request's drafts, drafted and accepted tokens; None without speculative decoding."""
        if self.options.spec_decode is None:
            return None
        drafts, draft_tokens, accepted = self._spec_counts.pop(request_id, (0, 0, 0))
        return SpecDecodeCounts(drafts, draft_tokens, accepted)

    @property
    def in_flight(self) -> int:
        return len(self.scheduler.running) + len(self.scheduler.waiting)

    def _problem(self, request: Request) -> str | None:
        rid = request.request_id
        n = len(request.prompt_token_ids)
        if n == 0:
            return f"request {rid}: empty prompt"
        if request.max_tokens <= 0:
            return f"request {rid}: max_tokens={request.max_tokens} must be > 0"
        if n + request.max_tokens > self.max_context:
            return (
                f"request {rid}: prompt of {n} tokens + max_tokens {request.max_tokens} exceeds the "
                f"model context of {self.max_context}"
            )
        need = self.blocks.blocks_for_tokens(n + request.max_tokens)
        if need > self.blocks.num_blocks:
            return f"request {rid}: needs {need} KV blocks, the simulated pool has {self.blocks.num_blocks}"
        return None

    def describe(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "kind": "sim",
            "simulated": True,
            "scheduler": self.options.kind,
            "options": {
                "policy": self.options.policy,
                "aging_s": self.options.aging_s,
                self.options.kind: asdict(
                    self.options.static if self.options.kind == "static" else self.options.continuous
                ),
                "block_size": self.options.block_size,
                "step_gap_s": self.options.step_gap_s,
                "dispatch_s": self.options.dispatch_s,
            },
            "kv_blocks": self.blocks.num_blocks,
            "cost_model": self.cost.describe(),
            **({"spec_decode": self.options.spec_decode.describe()} if self.options.spec_decode else {}),
            **self._description,
        }


def _decoding(chunk: Any) -> bool:
    """A one-token chunk extending a sequence that has output: a decode, which speculation replaces."""
    return chunk.yields_token and chunk.num_tokens == 1 and chunk.seq.num_output_tokens > 0


def _verify_features(f: StepFeatures, plan: Any, k: int) -> StepFeatures:
    """The step's work with every decode a verify of k+1 query tokens: k more decode rows per decoding sequence,
    each attending its context plus the drafts before it, and each through the LM head. The drafter's own cost
    is not modelled (an n-gram or EAGLE-style head is small beside the target; a separate draft model is not)."""
    contexts = [c.seq.num_computed_tokens + 1 for c in plan.chunks if _decoding(c)]
    n = len(contexts)
    attended = k * sum(contexts) + n * k * (k + 1) // 2
    return f._replace(
        decode_seqs=f.decode_seqs + k * n,
        attended_context=f.attended_context + attended,
        sampled_rows=f.sampled_rows + k * n,
        decode_context=f.decode_context + attended,
    )
