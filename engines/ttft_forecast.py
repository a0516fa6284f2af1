"""A new request's time to first token, projected forward on the engine's own step price.

SLO-aware admission (`engines/admission.py`) predicts with this where the engine has a cost model (the
simulator: the one that prices its steps prices the forecast, so the guard and the engine cannot disagree
on how fast the hardware is). The projection counts steps, then prices them:

- a slot: every running sequence holds its slot for the steps its tokens still need (the prompt left in
  chunks of the step's token budget, then one step per output token up to `max_tokens`, the only length a
  scheduler knows); the sequences the policy serves first take the slots as they free, in that order, each
  holding its own for its steps; the request gets the next one;
- its first token: its own prompt in budget-sized chunks after that, and never before the step budget has
  computed every prompt token served before it (the running prefills', the queue ahead's, its own);
- seconds: those steps at the price of a decode step of the batch they run in (the running sequences and
  those admitted before it, at most the slots; their contexts), plus what each prompt chunk adds to a step.

Not projected: later arrivals the policy serves first (a fair order does: the tenant term of the guard covers
it), KV blocks running out (preemption), and an output that ends at EOS before `max_tokens` (a wait
overstated, so a request shed that would have made it).
"""

from __future__ import annotations

import heapq
from collections.abc import Callable, Iterable
from collections.abc import Sequence as Seq

from engines.sequence import Sequence
from engines.step_features import StepFeatures

StepPrice = Callable[[StepFeatures], float]  # seconds one step of these counts takes (the engine's cost model)


def steps_held(seq: Sequence, budget: int) -> int:
    """Steps `seq` keeps its slot from its next step on: its uncomputed tokens in chunks of `budget` (a decoding
    sequence has one, its latest token), the last of which samples a token, then one step per token left."""
    uncomputed = max(1, len(seq.token_ids) - seq.num_computed_tokens)
    return -(-uncomputed // budget) + max(0, seq.request.max_tokens - seq.num_output_tokens - 1)


def slot_step(holding: Iterable[int], queued: Iterable[int], free: int) -> int:
    """The step (0: the next) from which one more sequence finds a slot, after each of `queued` (the steps each
    holds its slot, in the order they are served) took one: `free` slots at once, then the earliest to free of
    `holding` (steps each running sequence still holds its slot) and of those admitted meanwhile. `free` below
    0 (a fallback cap under the running count): that many slots vanish as they free."""
    heap = list(holding)
    heapq.heapify(heap)
    at = 0
    while free < 0 and heap:
        at = heapq.heappop(heap)
        free += 1
    for hold in queued:
        if free > 0:
            free -= 1
        elif heap:
            at = max(at, heapq.heappop(heap))
        heapq.heappush(heap, at + hold)
    if free > 0 or not heap:
        return at
    return max(at, heap[0])


def _decode_step(n: int, context: int) -> StepFeatures:
    """A decode step of `n` sequences reading `context` cached tokens together (as `step_features` counts it)."""
    return StepFeatures(
        decode_seqs=n, attended_context=context + n, kv_read_tokens=context, sampled_rows=n, decode_context=context + n
    )


def _with_chunk(step: StepFeatures, tokens: int) -> StepFeatures:
    """`step` plus a fresh prompt chunk of `tokens` (one causal SDPA from position 0)."""
    pairs = tokens * (tokens + 1) // 2
    return step._replace(
        prefill_tokens=tokens,
        prefill_chunks=1,
        attended_context=step.attended_context + pairs,
        sampled_rows=step.sampled_rows + 1,
        prefill_self_pairs=pairs,
    )


def _prompt_left(seq: Sequence) -> int:
    """Prompt (or recompute) tokens `seq` has still to compute before it samples; 0 once it decodes."""
    uncomputed = len(seq.token_ids) - seq.num_computed_tokens
    return uncomputed if seq.num_computed_tokens < seq.num_prompt_tokens or seq.num_output_tokens == 0 else 0


def forecast_ttft(
    seq: Sequence, running: Seq[Sequence], ahead: Seq[Sequence], slots: int, budget: int, price: StepPrice
) -> float:
    """Seconds from now until `seq` (not yet queued) samples its first token, with `ahead` served before it."""
    at = slot_step(
        (steps_held(s, budget) for s in running), (steps_held(s, budget) for s in ahead), slots - len(running)
    )
    decoding = sum(1 for s in running if not _prompt_left(s))
    room = max(1, budget - min(decoding, slots))  # the step budget left to prompt chunks beside the decodes
    own = max(1, _prompt_left(seq))
    prompts = own + sum(_prompt_left(s) for s in (*running, *ahead))
    steps = max(at + -(-own // room), -(-prompts // room))
    n = max(1, min(slots, len(running) + len(ahead) + 1))
    contexts = [s.num_computed_tokens for s in running]
    context = round(n * sum(contexts) / len(contexts)) if contexts else 0
    decode = _decode_step(n, context)
    base = price(decode)
    chunks, tail = divmod(prompts, room)
    extra = chunks * (price(_with_chunk(decode, room)) - base) if chunks else 0.0
    extra += price(_with_chunk(decode, tail)) - base if tail else 0.0
    return steps * base + max(0.0, extra)


def tenant_steps(running: Seq[Sequence], queued: Seq[Sequence], budget: int) -> int:
    """Steps until a tenant's own running sequences have freed a slot for each of its `queued` ones: how long
    its next request waits where the policy serves this tenant last (fair sharing, a heavy tenant)."""
    if not queued or not running:
        return 0
    return slot_step((steps_held(s, budget) for s in running), (steps_held(s, budget) for s in queued[:-1]), 0)


def steps_seconds(steps: int, running: Seq[Sequence], slots: int, price: StepPrice) -> float:
    """`steps` decode steps of the running batch (at most `slots` sequences), priced."""
    if steps <= 0:
        return 0.0
    n = max(1, min(slots, len(running)))
    context = sum(s.num_computed_tokens for s in running[:n])
    return steps * price(_decode_step(n, context))
